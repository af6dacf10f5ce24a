/* test_daemon.c - the daemon's translation of its options into the leader
 * election's configuration. */
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
	daemon_lease_config(&o, &c);
	CHECK_STR(c.namespace, "ccm");
	CHECK_STR(c.name, "cloud-controller-manager");
	CHECK(c.lease_duration_ns == 30 * S);
	CHECK(c.renew_deadline_ns == 10 * S);
	CHECK(c.retry_period_ns == 2 * S);
	CHECK(c.identity == NULL && c.on_started_leading == NULL);
	options_free(&o);
}

TEST_MAIN()
