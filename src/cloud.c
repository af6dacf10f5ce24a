/* cloud.c - the static table of providers and the provider error policy. */
#include <string.h>

#include "cloud.h"
#include "err.h"
#include "../providers/metadata/metadata.h"

/* No dlopen: the binary is static, so every provider is linked in and listed
 * here. Keep cloud_names in step with the table. */
static const struct cloud_provider *const cloud_table[] = {
	&metadata_provider,
};

static const char cloud_names[] = "metadata";

const struct cloud_provider *
cloud_provider_find(const char *name)
{
	size_t i;

	if (name == NULL)
		return NULL;
	for (i = 0; i < sizeof(cloud_table) / sizeof(cloud_table[0]); i++)
		if (strcmp(cloud_table[i]->name, name) == 0)
			return cloud_table[i];
	return NULL;
}

const char *
cloud_provider_names(void)
{
	return cloud_names;
}

int
cloud_provider_lookup(const char *name, const struct cloud_provider **ret,
    struct errbuf *e)
{
	const struct cloud_provider *p;

	if ((p = cloud_provider_find(name)) == NULL)
		return errbuf_set(e, ERR_INVALID, "--cloud-provider \"%.64s\": unknown provider; "
		    "known: %s", name ? name : "", cloud_names);
	*ret = p;
	return 0;
}

int
cloud_err_retryable(int code)
{
	switch (code) {
	case ERR_NOT_FOUND:
	case ERR_NOT_IMPLEMENTED:
	case ERR_IMPLEMENTED_ELSEWHERE:
		return 0;
	default:
		return err_retryable(code);
	}
}

int
cloud_err_allows_delete(int code, const struct cloud_provider *p)
{
	return code == ERR_NOT_FOUND && p != NULL && (p->flags & CLOUD_DEFINITIVE) != 0;
}
