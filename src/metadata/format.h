/* format.h - how `bootccm metadata` prints an instance: a JSON object,
 * shell assignments, or kubelet flags; and the pieces they share: the node
 * IPs, the labels a kubelet may set on itself, shell quoting.
 *
 * Contract: never logs, never fails on a valid instance except for the
 * output cap. Labels are only the three a kubelet may set on itself under
 * NodeRestriction (zone, region, instance type); a value that is not a valid
 * label value is sanitized, or omitted when nothing valid is left, and the
 * caller learns which (struct md_label) to warn about it. */
#ifndef BOOTCCM_MD_FORMAT_H
#define BOOTCCM_MD_FORMAT_H

#include <stddef.h>

#include "base/err.h"
#include "metadata/metadata.h"

#define MD_LABELS 3               /* zone, region, instance type */
#define MD_LABEL_VALUE_MAX 64     /* a label value's 63 bytes and the NUL */
#define MD_FORMAT_OUT_MAX 65536   /* bytes of printed output */

#define MD_LABEL_ZONE "topology.kubernetes.io/zone"
#define MD_LABEL_REGION "topology.kubernetes.io/region"
#define MD_LABEL_INSTANCE_TYPE "node.kubernetes.io/instance-type"

enum md_format { MD_FORMAT_JSON, MD_FORMAT_ENV, MD_FORMAT_KUBELET_FLAGS };

enum md_label_status {
	MD_LABEL_ABSENT,     /* the instance has no such fact */
	MD_LABEL_OK,         /* value is the fact */
	MD_LABEL_SANITIZED,  /* value is the fact made a valid label value */
	MD_LABEL_OMITTED,    /* nothing valid was left: no label */
};

struct md_label {
	const char *key;                 /* MD_LABEL_* */
	const char *raw;                 /* the instance's fact (borrowed) */
	enum md_label_status status;
	char value[MD_LABEL_VALUE_MAX];  /* set when OK or SANITIZED */
};

/* md_format_parse parses "json", "env" or "kubelet-flags". 0 or ERR_INVALID. */
int md_format_parse(const char *s, enum md_format *ret);

/* md_format_label_value makes in a valid label value in out (at most 63
 * bytes of [-A-Za-z0-9_.], alphanumeric at both ends): bytes outside the set
 * become '-' (one per run), non-alphanumeric ends are cut, the rest is
 * truncated to fit. Returns the status; ABSENT for "". */
enum md_label_status md_format_label_value(const char *in, char *out, size_t cap);

/* md_format_labels fills out with the zone, region and instance type labels. */
void md_format_labels(const struct md_instance *in, struct md_label out[MD_LABELS]);

/* md_format_node_ip writes the kubelet's --node-ip value: the first IPv4
 * InternalIP (else the first IPv4 ExternalIP), then a comma and the first
 * IPv6 address (InternalIP before ExternalIP) when there is one; "" when the
 * instance has no IP at all. */
void md_format_node_ip(const struct md_instance *in, char *buf, size_t cap);

/* md_format_shell_quote writes in as one single-quoted shell word (a quote
 * inside becomes '\''). Returns 0 or ERR_TOO_LARGE. */
int md_format_shell_quote(const char *in, char *out, size_t cap);

/* md_format_write prints in as f into buf (NUL-terminated, ending with a
 * newline). Returns the length, or ERR_TOO_LARGE. */
int md_format_write(const struct md_instance *in, enum md_format f, char *buf,
    size_t cap, struct errbuf *e);

#endif
