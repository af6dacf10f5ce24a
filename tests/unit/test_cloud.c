/* test_cloud.c - the provider table and the provider error policy. */
#include <string.h>

#include "harness.h"
#include "cloud.h"
#include "base/err.h"

TEST(find_metadata)
{
	const struct cloud_provider *p = cloud_provider_find("metadata");

	CHECK(p != NULL);
	CHECK_STR(p->name, "metadata");
	CHECK(p->init != NULL && p->free != NULL);
	CHECK(p->instances != NULL && p->instances->metadata != NULL);
	CHECK(p->instances->exists != NULL && p->instances->shutdown != NULL);
	CHECK(p->instances->list == NULL);
	CHECK(p->load_balancers == NULL);
	CHECK(p->routes == NULL);
}

TEST(find_unknown)
{
	CHECK(cloud_provider_find("aws") == NULL);
	CHECK(cloud_provider_find("") == NULL);
	CHECK(cloud_provider_find(NULL) == NULL);
	CHECK(cloud_provider_find("Metadata") == NULL);
	CHECK(cloud_provider_find("metadata ") == NULL);
}

TEST(names_list_every_provider)
{
	CHECK_STR(cloud_provider_names(), "metadata, static, hcloud");
	CHECK(cloud_provider_find("static") != NULL);
}

TEST(lookup_message)
{
	const struct cloud_provider *p = NULL;
	struct errbuf e = { "" };

	CHECK(cloud_provider_lookup("x", &p, &e) == ERR_INVALID);
	CHECK(p == NULL);
	CHECK_STR(e.msg, "--cloud-provider \"x\": unknown provider; known: metadata, static, hcloud");
	CHECK(cloud_provider_lookup("metadata", &p, &e) == 0);
	CHECK(p == cloud_provider_find("metadata"));
}

TEST(addr_types_round_trip)
{
	static const char *const names[] = {
		"InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS",
	};
	enum cloud_addr_type t = CLOUD_ADDR_HOSTNAME;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		CHECK(cloud_addr_type_parse(names[i], &t) == 0);
		CHECK(t == (enum cloud_addr_type)i);
		CHECK_STR(cloud_addr_type_name(t), names[i]);
	}
	CHECK(cloud_addr_type_parse("internalip", &t) == ERR_INVALID);
	CHECK(cloud_addr_type_parse("", &t) == ERR_INVALID);
	CHECK(cloud_addr_type_parse(NULL, &t) == ERR_INVALID);
	CHECK(t == CLOUD_ADDR_EXTERNAL_DNS);  /* untouched on failure */
	CHECK_STR(cloud_addr_type_name((enum cloud_addr_type)99), "Unknown");
}

TEST(table_is_null_terminated_and_named)
{
	size_t n = 0;

	for (; cloud_providers[n] != NULL; n++) {
		CHECK(cloud_providers[n]->name != NULL && *cloud_providers[n]->name != '\0');
		CHECK(cloud_provider_find(cloud_providers[n]->name) == cloud_providers[n]);
	}
	CHECK(n >= 1);
}

TEST(retryable)
{
	CHECK(cloud_err_retryable(ERR_TRANSIENT));
	CHECK(cloud_err_retryable(ERR_TIMEOUT));
	CHECK(cloud_err_retryable(ERR_TOO_MANY_REQUESTS));
	CHECK(!cloud_err_retryable(ERR_NOT_FOUND));
	CHECK(!cloud_err_retryable(ERR_NOT_IMPLEMENTED));
	CHECK(!cloud_err_retryable(ERR_IMPLEMENTED_ELSEWHERE));
	CHECK(!cloud_err_retryable(ERR_PERMANENT));
	CHECK(!cloud_err_retryable(ERR_INVALID));
}

TEST(allows_delete_metadata_never)
{
	const struct cloud_provider *p = cloud_provider_find("metadata");
	static const int codes[] = { 0, ERR_NOT_FOUND, ERR_NOT_IMPLEMENTED,
		ERR_IMPLEMENTED_ELSEWHERE, ERR_TRANSIENT, ERR_PERMANENT, ERR_INVALID,
		ERR_GONE, ERR_TIMEOUT };
	size_t i;

	CHECK(p != NULL);
	CHECK((p->flags & CLOUD_DEFINITIVE) == 0);
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		CHECK(!cloud_err_allows_delete(codes[i], p));
	CHECK(!cloud_err_allows_delete(ERR_NOT_FOUND, NULL));
}

TEST(allows_delete_definitive_only_not_found)
{
	const struct cloud_provider definitive = { .name = "test", .flags = CLOUD_DEFINITIVE };

	CHECK(cloud_err_allows_delete(ERR_NOT_FOUND, &definitive));
	CHECK(!cloud_err_allows_delete(0, &definitive));
	CHECK(!cloud_err_allows_delete(ERR_NOT_IMPLEMENTED, &definitive));
	CHECK(!cloud_err_allows_delete(ERR_TRANSIENT, &definitive));
	CHECK(!cloud_err_allows_delete(ERR_GONE, &definitive));
}

/* cloud_services_of: the i-th of an array, any order, as often as asked */
TEST(services_of_an_array)
{
	struct cloud_service a = { .name = "a" }, b = { .name = "b" };
	const struct cloud_service *v[2] = { &a, &b };
	struct cloud_services s = cloud_services_of(v, 2);

	CHECK(s.n == 2);
	CHECK(s.at(s.arg, 1) == &b);
	CHECK(s.at(s.arg, 0) == &a);
	CHECK(s.at(s.arg, 1) == &b);
	s = cloud_services_of(v, 0);
	CHECK(s.n == 0);
}

/* An annotation left out for a NUL refuses the Service only for the
 * provider that reads it, naming it. */
TEST(service_nul_check)
{
	static const char *const nul[] = { "example.com/note", "bootccm.io/pool" };
	static const char *const keys[] = { "bootccm.io/load-balancer-ips", "bootccm.io/pool",
		NULL };
	static const char *const other[] = { "metallb.io/address-pool", NULL };
	struct cloud_service svc;
	struct errbuf e = { "" };

	memset(&svc, 0, sizeof(svc));
	svc.namespace_ = "shop";
	svc.name = "web";
	CHECK(cloud_service_nul_check(&svc, keys, "x/", &e) == 0);
	svc.nul_annotations = nul;
	svc.n_nul_annotations = 1;
	CHECK(cloud_service_nul_check(&svc, keys, NULL, &e) == 0);
	CHECK(cloud_service_nul_check(&svc, NULL, "example.org/", &e) == 0);
	CHECK(cloud_service_nul_check(&svc, NULL, "example.com/", &e) == ERR_INVALID);
	CHECK_STR(e.msg, "Service shop/web: annotation example.com/note holds a NUL character, "
	    "which bootccm cannot read");
	svc.n_nul_annotations = 2;
	CHECK(cloud_service_nul_check(&svc, other, NULL, &e) == 0);
	CHECK(cloud_service_nul_check(&svc, keys, NULL, &e) == ERR_INVALID);
	CHECK_STR(e.msg, "Service shop/web: annotation bootccm.io/pool holds a NUL character, "
	    "which bootccm cannot read");
	CHECK(cloud_service_nul_check(&svc, keys, NULL, NULL) == ERR_INVALID);
}

TEST_MAIN()
