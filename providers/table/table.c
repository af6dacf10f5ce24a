/* table.c - the static table of providers (cloud.h's cloud_providers): every
 * provider linked into the binary, by name. Adding a provider is one line
 * here and its directory beside this one. */
#include <stddef.h>

#include "cloud.h"
#include "../hcloud/hcloud.h"
#include "../metadata/metadata.h"
#include "../static/static.h"

const struct cloud_provider *const cloud_providers[] = {
	&metadata_provider,
	&static_provider,
	&hcloud_provider,
	NULL,
};
