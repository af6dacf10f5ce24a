/* featuregate.c - the feature gates of the upstream cloud-controller-manager
 * (Kubernetes v1.37.2: k8s.io/cloud-provider's app registers apiserver's,
 * client-go's, component-base's and its own gates), for --feature-gates. */
#include "config/featuregate.h"

#include <stdlib.h>
#include <string.h>

#include "config/flags.h"

#define FEATUREGATE_NAME_MAX 128  /* bytes: a gate's name */

/* locked: -1 the gate may be set either way, else the only value it takes */
struct featuregate {
	const char *name;
	signed char locked;
};

/* Sorted by name (strcmp) for bsearch. */
static const struct featuregate featuregate_known[] = {
#include "config/featuregate_list.h"
};
#define FEATUREGATE_N (sizeof(featuregate_known) / sizeof(featuregate_known[0]))

static int
featuregate_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct featuregate *)elem)->name);
}

int
featuregate_check(const char *list, struct errbuf *e)
{
	const char *p = list ? list : "";

	while (*p != '\0') {
		size_t len = strcspn(p, ","), klen = strcspn(p, "=,"), vlen;
		char name[FEATUREGATE_NAME_MAX], v[16];
		const struct featuregate *g;
		int on;

		/* upstream trims the spaces around names and values */
		while (klen > 0 && p[0] == ' ') {
			p++;
			len--;
			klen--;
		}
		vlen = len > klen ? len - klen - 1 : 0;
		if (klen >= sizeof(name) || vlen >= sizeof(v))
			return errbuf_set(e, ERR_INVALID, "--feature-gates: unrecognized feature "
			    "gate: %.*s", (int)klen, p);
		memcpy(name, p, klen);
		while (klen > 0 && name[klen - 1] == ' ')
			klen--;
		name[klen] = '\0';
		memcpy(v, p + len - vlen, vlen);
		v[vlen] = '\0';
		on = flags_parse_bool(v + strspn(v, " "));
		g = bsearch(name, featuregate_known, FEATUREGATE_N, sizeof(featuregate_known[0]),
		    featuregate_cmp);
		if (g == NULL)
			return errbuf_set(e, ERR_INVALID, "--feature-gates: unrecognized feature "
			    "gate: %s", name);
		if (g->locked >= 0 && on >= 0 && on != g->locked)
			return errbuf_set(e, ERR_INVALID, "--feature-gates: cannot set feature gate "
			    "%s to %s, feature is locked to %s", name, on ? "true" : "false",
			    g->locked ? "true" : "false");
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}
