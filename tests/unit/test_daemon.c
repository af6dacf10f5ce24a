/* test_daemon.c - the daemon's translation of its options into the leader
 * election's configuration, and why a controller does not run. */
#include "daemon.h"
#include "harness.h"

#define S 1000000000LL

TEST(lease_config_from_options)
{
	struct options o;
	struct lease_config c;
	struct errbuf e = { "" };
	char *argv[] = { "bootccm", "--leader-elect-resource-namespace=ccm",
	    "--leader-elect-lease-duration=30s", NULL };

	CHECK(options_parse(&o, 3, argv, 1, &e) == 0);
	options_lease_config(&o, &c);
	CHECK_STR(c.namespace, "ccm");
	CHECK_STR(c.name, "cloud-controller-manager");
	CHECK(c.lease_duration_ns == 30 * S);
	CHECK(c.renew_deadline_ns == 10 * S);
	CHECK(c.retry_period_ns == 2 * S);
	CHECK(c.identity == NULL && c.on_started_leading == NULL);
	options_free(&o);
}

static const struct cloud_instances_ops some_instances;
static const struct cloud_lb_ops some_lbs;

TEST(controllers_that_do_not_run_say_why)
{
	const struct cloud_provider bare = { .name = "bare" };
	const struct cloud_provider inst = { .name = "inst", .instances = &some_instances,
	    .load_balancers = &some_lbs };
	char buf[128];

	/* built, and the provider has what it needs */
	CHECK(daemon_controller_off(&inst, OPTIONS_CTRL_CLOUD_NODE, buf, sizeof(buf)) == NULL);
	CHECK(daemon_controller_off(&inst, OPTIONS_CTRL_CLOUD_NODE_LIFECYCLE, buf,
	    sizeof(buf)) == NULL);
	/* a NULL operation group */
	CHECK_STR(daemon_controller_off(&bare, OPTIONS_CTRL_CLOUD_NODE, buf, sizeof(buf)),
	    "provider \"bare\" has no instances");
	CHECK_STR(daemon_controller_off(NULL, OPTIONS_CTRL_CLOUD_NODE, buf, sizeof(buf)),
	    "no --cloud-provider");
	/* each controller asks for its own group */
	CHECK(daemon_controller_off(&inst, OPTIONS_CTRL_SERVICE, buf, sizeof(buf)) == NULL);
	CHECK_STR(daemon_controller_off(&inst, OPTIONS_CTRL_ROUTE, buf, sizeof(buf)),
	    "provider \"inst\" has no routes");
	CHECK_STR(daemon_controller_off(&bare, OPTIONS_CTRL_SERVICE, buf, sizeof(buf)),
	    "provider \"bare\" has no load balancers");
}

TEST_MAIN()
