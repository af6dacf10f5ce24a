/* test_flags.c - pflag syntax, Go durations, bootccm's option table. */
#include <stdlib.h>

#include "config/flags.h"
#include "harness.h"
#include "config/options.h"

static int b1;
static int i1;
static double f1;
static char *s1;
static int64_t d1;

static struct flag set[] = {
	{ "enable", FLAG_BOOL, &b1, "true", "a boolean", 0 },
	{ "count", FLAG_INT, &i1, "3", "an int", 0 },
	{ "qps", FLAG_FLOAT, &f1, "20", "a float", 0 },
	{ "name", FLAG_STRING, &s1, "x", "a string", 0 },
	{ "period", FLAG_DURATION, &d1, "15s", "a duration", 0 },
	{ "v", FLAG_INT, &i1, "0", "verbosity", 0 },
};
#define NSET (sizeof(set) / sizeof(set[0]))

static int
parse(int argc, char **argv, struct errbuf *e)
{
	flags_defaults(set, NSET, e);
	return flags_parse(set, NSET, argc, argv, 1, NULL, e);
}

TEST(defaults)
{
	struct errbuf e;
	char *argv[] = { "p" };
	CHECK(parse(1, argv, &e) == 0);
	CHECK(b1 == 1 && i1 == 0 && f1 == 20 && d1 == 15 * NS_PER_S);
	CHECK_STR(s1, "x");
}

TEST(equals_and_separate_values)
{
	struct errbuf e;
	char *argv[] = { "p", "--count=7", "--name", "y z", "--qps=2.5", "--period", "1h30m" };
	CHECK(parse(7, argv, &e) == 0);
	CHECK(i1 == 7);
	CHECK_STR(s1, "y z");
	CHECK(f1 == 2.5);
	CHECK(d1 == 90 * 60 * NS_PER_S);
	CHECK(flags_find(set, NSET, "count")->set == 1);
}

/* FLAG_STRINGS: repeatable, in order; the first value given replaces the
 * default, a later one is appended (pflag's stringSlice). */
TEST(repeatable_strings_accumulate)
{
	static char *list;
	struct flag t[] = {
		{ "class", FLAG_STRINGS, &list, "dflt", "repeatable", 0 },
	};
	struct errbuf e;
	char *none[] = { "p" };
	char *two[] = { "p", "--class", "a.io/x", "--class=b.io/y" };
	char *one[] = { "p", "--class=c.io/z" };

	CHECK(flags_defaults(t, 1, &e) == 0);
	CHECK(flags_parse(t, 1, 1, none, 1, NULL, &e) == 0);
	CHECK_STR(list, "dflt");
	CHECK(flags_defaults(t, 1, &e) == 0);
	CHECK(flags_parse(t, 1, 4, two, 1, NULL, &e) == 0);
	CHECK_STR(list, "a.io/x,b.io/y");
	CHECK(flags_defaults(t, 1, &e) == 0);
	CHECK(flags_parse(t, 1, 2, one, 1, NULL, &e) == 0);
	CHECK_STR(list, "c.io/z");
	flags_free(t, 1);
	CHECK(list == NULL);
}

TEST(booleans_never_take_the_next_argument)
{
	struct errbuf e;
	char *argv1[] = { "p", "--enable=false" };
	CHECK(parse(2, argv1, &e) == 0 && b1 == 0);
	char *argv2[] = { "p", "--enable" };
	CHECK(parse(2, argv2, &e) == 0 && b1 == 1);
	char *argv3[] = { "p", "--enable", "false" };
	CHECK(parse(3, argv3, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "unexpected argument \"false\"");
	char *argv4[] = { "p", "--enable=maybe" };
	CHECK(parse(2, argv4, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--enable");
}

TEST(verbosity_forms)
{
	struct errbuf e;
	char *a1[] = { "p", "-v=4" };
	CHECK(parse(2, a1, &e) == 0 && i1 == 4);
	char *a2[] = { "p", "-v", "5" };
	CHECK(parse(3, a2, &e) == 0 && i1 == 5);
	char *a3[] = { "p", "-v6" };
	CHECK(parse(2, a3, &e) == 0 && i1 == 6);
	char *a4[] = { "p", "--v=7" };
	CHECK(parse(2, a4, &e) == 0 && i1 == 7);
}

TEST(unknown_and_malformed_flags_are_named)
{
	struct errbuf e;
	char *a1[] = { "p", "--nope=1" };
	CHECK(parse(2, a1, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "unknown flag: --nope");
	char *a2[] = { "p", "--count=seven" };
	CHECK(parse(2, a2, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "invalid argument \"seven\" for \"--count\" flag");
	char *a3[] = { "p", "--period=15" };
	CHECK(parse(2, a3, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--period");
	char *a4[] = { "p", "--name" };
	CHECK(parse(2, a4, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "flag needs an argument: --name");
	char *a5[] = { "p", "-name=x" };
	CHECK(parse(2, a5, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "unknown shorthand flag: 'n'");
	char *a6[] = { "p", "positional" };
	CHECK(parse(2, a6, &e) == ERR_INVALID);
	char *a7[] = { "p", "--count=99999999999" };
	CHECK(parse(2, a7, &e) == ERR_INVALID);
	char *a8[] = { "p", "--qps=nan" };
	CHECK(parse(2, a8, &e) == ERR_INVALID);
	char *a9[] = { "p", "---count=1" };
	CHECK(parse(2, a9, &e) == ERR_INVALID);
}

TEST(double_dash_ends_flags)
{
	struct errbuf e;
	int rest = -1;
	char *a[] = { "p", "--count=1", "--", "--count=2" };
	flags_defaults(set, NSET, &e);
	CHECK(flags_parse(set, NSET, 4, a, 1, &rest, &e) == 0);
	CHECK(rest == 3 && i1 == 1);
}


TEST(options_upstream_defaults)
{
	struct options o;
	struct errbuf e;
	char *argv[] = { "bootccm" };
	CHECK(options_parse(&o, 1, argv, 1, &e) == 0);
	CHECK(o.secure_port == 10258);
	CHECK_STR(o.bind_address, "0.0.0.0");
	CHECK(o.kube_api_qps == 20 && o.kube_api_burst == 30);
	CHECK(o.leader_elect == 1);
	CHECK(o.leader_elect_lease_duration_ns == 15 * NS_PER_S);
	CHECK(o.leader_elect_renew_deadline_ns == 10 * NS_PER_S);
	CHECK(o.leader_elect_retry_period_ns == 2 * NS_PER_S);
	CHECK_STR(o.leader_elect_resource_name, "cloud-controller-manager");
	CHECK_STR(o.leader_elect_resource_namespace, "kube-system");
	CHECK_STR(o.controllers, "*");
	CHECK_STR(o.cluster_name, "kubernetes");
	CHECK(o.configure_cloud_routes == 1 && o.allocate_node_cidrs == 0);
	CHECK(o.node_monitor_period_ns == 5 * NS_PER_S);
	CHECK(o.node_deletion_grace_period_ns == 300 * NS_PER_S);
	CHECK(o.node_status_update_frequency_ns == 300 * NS_PER_S);
	CHECK(o.concurrent_node_syncs == 1 && o.concurrent_service_syncs == 1);
	CHECK(o.node_name != NULL && o.node_name[0] != '\0');
	options_free(&o);
}

TEST(options_validation)
{
	struct options o;
	struct errbuf e;
	char *a1[] = { "bootccm", "--secure-port=70000" };
	CHECK(options_parse(&o, 2, a1, 1, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--secure-port");
	options_free(&o);
	char *a2[] = { "bootccm", "--leader-elect-renew-deadline=20s" };
	CHECK(options_parse(&o, 2, a2, 1, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--leader-elect-lease-duration");
	options_free(&o);
	char *a3[] = { "bootccm", "--logging-format=xml" };
	CHECK(options_parse(&o, 2, a3, 1, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--logging-format");
	options_free(&o);
	char *a4[] = { "bootccm", "--help" };
	CHECK(options_parse(&o, 2, a4, 1, &e) == OPTIONS_EXIT_HELP);
	options_free(&o);
	char *a5[] = { "bootccm", "--kube-api-qps=0" };
	CHECK(options_parse(&o, 2, a5, 1, &e) == ERR_INVALID);
	options_free(&o);
}

/* The service controller's flags: repeatable classes, class-only needs
 * one, the drift period's default. */
TEST(options_service_controller)
{
	struct options o;
	struct errbuf e;
	char *a0[] = { "bootccm" };
	CHECK(options_parse(&o, 1, a0, 1, &e) == 0);
	CHECK(o.load_balancer_classes == NULL && o.load_balancer_class_only == 0);
	CHECK(o.service_sync_period_ns == 300 * NS_PER_S);
	options_free(&o);
	char *a1[] = { "bootccm", "--load-balancer-class", "example.com/lb",
	    "--load-balancer-class=other.io/lb", "--load-balancer-class-only" };
	CHECK(options_parse(&o, 5, a1, 1, &e) == 0);
	CHECK_STR(o.load_balancer_classes, "example.com/lb,other.io/lb");
	CHECK(o.load_balancer_class_only == 1);
	options_free(&o);
	char *a2[] = { "bootccm", "--load-balancer-class-only" };
	CHECK(options_parse(&o, 2, a2, 1, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--load-balancer-class-only needs at least one");
	options_free(&o);
	char *a3[] = { "bootccm", "--load-balancer-class=not a class" };
	CHECK(options_parse(&o, 2, a3, 1, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--load-balancer-class \"not a class\"");
	options_free(&o);
	char *a4[] = { "bootccm", "--service-sync-period=0s" };
	CHECK(options_parse(&o, 2, a4, 1, &e) == ERR_INVALID);
	CHECK_CONTAINS(e.msg, "--service-sync-period");
	options_free(&o);
}

/* refuse parses one argument expecting ERR_INVALID with a message holding
 * want. */
static int
refuse(const char *arg, const char *want, struct errbuf *e)
{
	struct options o;
	char *a[] = { "bootccm", (char *)arg };
	int r = options_parse(&o, 2, a, 1, e);

	options_free(&o);
	if (r != ERR_INVALID || strstr(e->msg, want) == NULL) {
		fprintf(stderr, "  %s: got %d \"%s\", want \"%s\"\n", arg, r, e->msg, want);
		return 0;
	}
	return 1;
}

static int
accept(const char *arg)
{
	struct options o;
	struct errbuf e = { "" };
	char *a[] = { "bootccm", (char *)arg };
	int r = options_parse(&o, 2, a, 1, &e);

	options_free(&o);
	if (r != 0)
		fprintf(stderr, "  %s: got %d \"%s\"\n", arg, r, e.msg);
	return r == 0;
}

TEST(addresses_cidrs_and_urls_are_checked_at_parse)
{
	struct errbuf e;

	CHECK(refuse("--bind-address=notanip", "--bind-address \"notanip\" is not an IP", &e));
	CHECK(refuse("--bind-address=10.0.0.256", "--bind-address", &e));
	CHECK(accept("--bind-address=::1") && accept("--bind-address=127.0.0.1"));
	CHECK(accept("--bind-address="));
	CHECK(refuse("--cluster-cidr=bogus", "--cluster-cidr \"bogus\": \"bogus\" is not a CIDR",
	    &e));
	CHECK(refuse("--cluster-cidr=10.0.0.0/8,fd00::/48,10.1.0.0/16",
	    "at most 2 CIDRs, one per IP family", &e));
	CHECK(refuse("--cluster-cidr=10.0.0.0/8,10.1.0.0/16", "one IPv4 and one IPv6", &e));
	CHECK(refuse("--cluster-cidr=10.0.0.0/8,", "--cluster-cidr", &e));
	CHECK(refuse("--cluster-cidr=10.0.0.0/33", "--cluster-cidr", &e));
	CHECK(accept("--cluster-cidr=10.244.0.0/16,fd00:10:244::/56"));
	CHECK(accept("--cluster-cidr=10.244.1.1/16"));  /* host bits, as Go's ParseCIDR */
	CHECK(refuse("--master=notaurl", "--master: server \"notaurl\" must be an https:// URL",
	    &e));
	CHECK(refuse("--master=https://127.0.0.1:99999", "--master: server", &e));
	CHECK(refuse("--master=https://user:pw@h", "user information", &e));
	CHECK(strstr(e.msg, "pw") == NULL);
	CHECK(accept("--master=https://127.0.0.1:6443"));
	CHECK(refuse("--timeout=0s", "--timeout", &e));
	CHECK(refuse("--authorization-webhook-cache-authorized-ttl=-1s",
	    "--authorization-webhook-cache-authorized-ttl -1s: must be zero or more", &e));
}

/* Every duration flag has an upper bound, checked at parse (so by the
 * daemon and --validate alike), naming the flag; the extremes of the issue
 * that made loops spin or the leader-election check overflow (UBSan). */
TEST(durations_are_bounded)
{
	static const char *const flags[] = {
		"node-monitor-period", "node-status-update-frequency",
		"route-reconciliation-period", "service-sync-period", "min-resync-period",
		"node-deletion-grace-period", "leader-elect-lease-duration",
		"leader-elect-renew-deadline", "leader-elect-retry-period",
		"authentication-token-webhook-cache-ttl",
		"authorization-webhook-cache-authorized-ttl",
		"authorization-webhook-cache-unauthorized-ttl", "timeout",
	};
	static const char *const extremes[] = {
		"9223372036854775807ns", "9223372036854775000ns", "7686143364045646500ns",
		"2562047h", "-9223372036854775807ns", "-1ns",
	};
	struct errbuf e;
	char arg[128], want[96];

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		for (size_t j = 0; j < sizeof(extremes) / sizeof(extremes[0]); j++) {
			snprintf(arg, sizeof(arg), "--%s=%s", flags[i], extremes[j]);
			snprintf(want, sizeof(want), "--%s ", flags[i]);
			CHECK(refuse(arg, want, &e));
			CHECK_CONTAINS(e.msg, "at most");
		}
	/* the bounds themselves are accepted, one past them is not */
	CHECK(accept("--node-monitor-period=24h"));
	CHECK(refuse("--node-monitor-period=24h0m0.000000001s", "at most 24h0m0s", &e));
	CHECK(accept("--service-sync-period=24h"));
	CHECK(refuse("--node-status-update-frequency=25h", "--node-status-update-frequency",
	    &e));
	CHECK(accept("--min-resync-period=168h") && accept("--node-deletion-grace-period=168h"));
	CHECK(refuse("--min-resync-period=169h", "at most 168h0m0s", &e));
	CHECK(accept("--node-deletion-grace-period=0s"));
	CHECK(refuse("--route-reconciliation-period=0s", "greater than zero", &e));
	CHECK(accept("--timeout=1h") && accept("--authentication-token-webhook-cache-ttl=0s"));
	CHECK(refuse("--leader-elect-renew-deadline=2h", "at most 1h0m0s", &e));
	/* the lease rules: client-go's by flag name, then the elector's own */
	CHECK(refuse("--leader-elect-lease-duration=1500ms",
	    "--leader-elect-lease-duration must be greater than", &e));
	{
		struct options o;
		char *a[] = { "bootccm", "--leader-elect-lease-duration=1h",
		    "--leader-elect-renew-deadline=59m59s", "--leader-elect-retry-period=1h" };
		CHECK(options_parse(&o, 4, a, 1, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, "1.2 x --leader-elect-retry-period");
		options_free(&o);
		char *b[] = { "bootccm", "--leader-elect-lease-duration=2500ms",
		    "--leader-elect-renew-deadline=2100ms", "--leader-elect-retry-period=1s" };
		CHECK(options_parse(&o, 4, b, 1, &e) == ERR_INVALID);
		CHECK_CONTAINS(e.msg, "whole seconds");
		options_free(&o);
		/* with --leader-elect=false nothing of the Lease matters */
		char *c[] = { "bootccm", "--leader-elect=false",
		    "--leader-elect-retry-period=1h", "--leader-elect-resource-name=../x" };
		CHECK(options_parse(&o, 4, c, 1, &e) == 0);
		options_free(&o);
	}
}

/* The names bootccm sends: the Lease's (DNS-1123 subdomain and label), the
 * Node's (a subdomain of at most 253 bytes), the cluster's (a label value). */
TEST(names_are_checked)
{
	struct errbuf e;
	char *big = malloc(100001);

	CHECK(refuse("--leader-elect-resource-name=../x%y", "--leader-elect-resource-name", &e));
	CHECK(refuse("--leader-elect-resource-name=", "--leader-elect-resource-name", &e));
	CHECK(refuse("--leader-elect-resource-namespace=kube.system",
	    "--leader-elect-resource-namespace", &e));
	CHECK(refuse("--leader-elect-resource-namespace=Kube", "not a namespace", &e));
	CHECK(accept("--leader-elect-resource-name=my.lock-1"));
	CHECK(accept("--leader-elect-resource-namespace=ccm-1"));
	memset(big, 'a', 100000);
	big[100000] = '\0';
	memcpy(big, "--node-name=", 12);
	CHECK(refuse(big, "(99988 bytes): not a Node name", &e));
	CHECK(strlen(e.msg) < 400);
	big[12 + 253] = '\0';
	for (size_t i = 12 + 63; i < 12 + 253; i += 64)
		big[i] = '.';
	CHECK(accept(big));
	big[12 + 253] = 'a';
	big[12 + 254] = '\0';
	CHECK(refuse(big, "--node-name", &e));
	CHECK(refuse("--node-name=Node_1", "--node-name", &e));
	CHECK(accept("--node-name=cp-1.example"));
	CHECK(refuse("--cluster-name=", "--cluster-name", &e));
	CHECK(refuse("--cluster-name=my cluster", "--cluster-name \"my cluster\"", &e));
	CHECK(refuse("--cluster-name=-x", "--cluster-name", &e));
	CHECK(refuse("--cluster-name=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    "want 1 to 63", &e));
	CHECK(accept("--cluster-name=Prod_eu-1.a"));
	free(big);
}

TEST(upstream_flags_are_known)
{
	struct options o;
	struct errbuf e;
	const char *flag, *why;
	size_t it = 0;
	char *a[] = { "bootccm", "--profiling", "--logtostderr=true", "--kube-api-content-type",
	    "application/vnd.kubernetes.protobuf", "--use-service-account-credentials=true",
	    "--requestheader-username-headers=X-Remote-User", "--client-ca-file=/ca.crt",
	    "--feature-gates=CloudControllerManagerWatchBasedRoutesReconciliation=true,"
	    "CloudControllerManagerWebhook=false", "--webhook-secure-port=10300",
	    "--authentication-kubeconfig=/a.conf", "--authorization-kubeconfig=/b.conf" };

	CHECK(options_parse(&o, (int)(sizeof(a) / sizeof(a[0])), a, 1, &e) == 0);
	CHECK_STR(o.authentication_kubeconfig, "/a.conf");
	CHECK_STR(o.authorization_kubeconfig, "/b.conf");
	CHECK(o.authentication_token_webhook_cache_ttl_ns == 10 * NS_PER_S);
	/* the flags given with a value bootccm does not act on, in table order;
	 * --logtostderr=true and the default request header are what bootccm
	 * does anyway, and a webhook port serves nothing upstream either */
	CHECK((why = options_ignored(&o, &it, &flag)) != NULL);
	CHECK_STR(flag, "profiling");
	CHECK_CONTAINS(why, "/debug/pprof");
	CHECK(options_ignored(&o, &it, &flag) != NULL);
	CHECK_STR(flag, "kube-api-content-type");
	CHECK(options_ignored(&o, &it, &flag) != NULL);
	CHECK_STR(flag, "use-service-account-credentials");
	CHECK(options_ignored(&o, &it, &flag) != NULL);
	CHECK_STR(flag, "client-ca-file");
	CHECK(options_ignored(&o, &it, &flag) != NULL);
	CHECK_STR(flag, "feature-gates");
	CHECK(options_ignored(&o, &it, &flag) == NULL);
	CHECK(options_ignored(&o, &it, &flag) == NULL);
	options_free(&o);

	CHECK(refuse("--enable-leader-migration", "--enable-leader-migration: refused: leader "
	    "migration is not supported", &e));
	CHECK(accept("--enable-leader-migration=false"));
	CHECK(refuse("--webhooks=foo", "--webhooks: refused", &e));
	CHECK(refuse("--tls-min-version=VersionTLS13", "use VersionTLS12", &e));
	CHECK(accept("--tls-min-version=VersionTLS12"));
	CHECK(refuse("--tls-cipher-suites=TLS_AES_128_GCM_SHA256", "--tls-cipher-suites", &e));
	CHECK(refuse("--feature-gates=Foo", "--feature-gates \"Foo\": \"Foo\" is not key=true",
	    &e));
	CHECK(refuse("--feature-gates=Foo=maybe", "--feature-gates", &e));
	CHECK(refuse("--feature-gates=Foo=true", "--feature-gates: unrecognized feature gate: Foo",
	    &e));
	CHECK(accept("--feature-gates= CloudControllerManagerWatchBasedRoutesReconciliation=false"));
	CHECK(refuse("--feature-gates=DeclarativeValidation=false", "--feature-gates: cannot set "
	    "feature gate DeclarativeValidation to false, feature is locked to true", &e));
	CHECK(refuse("--vmodule=x=y", "--vmodule", &e));
	CHECK(accept("--vmodule=gc*=3,node=4"));
	CHECK(refuse("--profiling=perhaps", "--profiling", &e));
	CHECK(refuse("--http2-max-streams-per-connection=x", "not an integer", &e));
	CHECK(refuse("--logtostderrr", "unknown flag: --logtostderrr", &e));
}

TEST(dash_h_is_help)
{
	struct options o;
	struct errbuf e;
	char *a[] = { "bootccm", "-h" };

	CHECK(options_parse(&o, 2, a, 1, &e) == OPTIONS_EXIT_HELP);
	options_free(&o);
	CHECK(refuse("-help", "unknown shorthand flag: 'h' in -help", &e));
}

/* parse args (after "bootccm") and report the controllers they enable as
 * a bit mask, or -1 when options_parse refuses them */
static int
controllers_of(const char *arg, struct errbuf *e)
{
	struct options o;
	char *a[] = { "bootccm", (char *)arg };
	int mask = 0;

	if (options_parse(&o, 2, a, 1, e) != 0) {
		options_free(&o);
		return -1;
	}
	for (unsigned b = 1; b <= OPTIONS_CTRL_CSR_APPROVER; b <<= 1)
		if (options_controller_enabled(&o, b))
			mask |= (int)b;
	options_free(&o);
	return mask;
}

TEST(options_controllers_like_upstream)
{
	struct errbuf e;
	const int all = OPTIONS_CTRL_CLOUD_NODE | OPTIONS_CTRL_CLOUD_NODE_LIFECYCLE |
	    OPTIONS_CTRL_ROUTE | OPTIONS_CTRL_SERVICE;

	CHECK(controllers_of("--controllers=*", &e) == all);
	/* csr-approver is off by default: "*" leaves it out, naming it adds it */
	CHECK(controllers_of("--controllers=*,csr-approver", &e) ==
	    (all | OPTIONS_CTRL_CSR_APPROVER));
	CHECK(controllers_of("--controllers=csr-approver", &e) == OPTIONS_CTRL_CSR_APPROVER);
	CHECK(controllers_of("--csr-deny", &e) == all);
	CHECK(controllers_of("--controllers=*,-route", &e) == (all & ~OPTIONS_CTRL_ROUTE));
	CHECK(controllers_of("--controllers=-route,*", &e) == (all & ~OPTIONS_CTRL_ROUTE));
	CHECK(controllers_of("--controllers=cloud-node", &e) == OPTIONS_CTRL_CLOUD_NODE);
	CHECK(controllers_of("--controllers=cloud-node,-cloud-node", &e) == 0);
	CHECK(controllers_of("--controllers=", &e) == 0);
	CHECK(controllers_of("--controllers=*,nodes", &e) == -1);
	CHECK_CONTAINS(e.msg, "unknown controller \"nodes\"");
	CHECK(controllers_of("--node-deletion-grace-period=-1s", &e) == -1);
	CHECK_CONTAINS(e.msg, "--node-deletion-grace-period");
	CHECK(controllers_of("--node-deletion-grace-period=0s", &e) == all);
}

TEST(usage_lists_defaults)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	options_usage(f, "bootccm");
	fclose(f);
	CHECK_CONTAINS(buf, "--leader-elect-lease-duration duration");
	CHECK_CONTAINS(buf, "(default 15s)");
	CHECK_CONTAINS(buf, "--secure-port int");
	CHECK_CONTAINS(buf, "(default 10258)");
	CHECK_CONTAINS(buf, "--node-status-update-frequency duration");
	CHECK_CONTAINS(buf, "(default 5m0s)");
	CHECK_CONTAINS(buf, "(default \"cloud-controller-manager\")");
	CHECK_CONTAINS(buf, "  -h, --help ");
	CHECK_CONTAINS(buf, "Upstream cloud-controller-manager flags");
	CHECK_CONTAINS(buf, "--profiling ");
	CHECK_CONTAINS(buf, "No effect: bootccm serves no /debug/pprof.");
	free(buf);
}

/* The usage lines name every subcommand of the table main dispatches
 * through (doctor was missing), each on its own line before the flags. */
TEST(usage_names_every_subcommand)
{
	char *buf = NULL, want[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	options_usage(f, "bootccm");
	fclose(f);
	char *flags = strstr(buf, "\nFlags:\n");
	CHECK(flags != NULL);
	*flags = '\0';
	CHECK(options_cmds_n >= 5);
	for (size_t i = 0; i < options_cmds_n; i++) {
		snprintf(want, sizeof(want), "\n       bootccm %s ", options_cmds[i].name);
		CHECK_CONTAINS(buf, want);
		CHECK(options_cmd_find(options_cmds[i].name) == &options_cmds[i]);
	}
	CHECK_CONTAINS(buf, "bootccm doctor [flags]");
	CHECK_CONTAINS(buf, "bootccm --validate [flags]");
	CHECK(options_cmd_find("doctors") == NULL && options_cmd_find("") == NULL);
	free(buf);
}

TEST_MAIN()
