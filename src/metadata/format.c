/* format.c - the printed forms of an instance. The JSON object is bootccm
 * metadata's stable interface (documented in bootccm(8)): keys never change
 * meaning, new keys may be added. */
#include "metadata/format.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "metadata/build.h"

struct md_out {
	char *buf;
	size_t cap, len;
	int over;
};

static void
md_out_put(struct md_out *o, const char *s, size_t n)
{
	if (o->over || n >= o->cap - o->len) {
		o->over = 1;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void
md_out_str(struct md_out *o, const char *s)
{
	md_out_put(o, s, strlen(s));
}

static void
md_out_json(struct md_out *o, const char *s)
{
	char esc[8];

	md_out_put(o, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			md_out_put(o, esc, 2);
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			md_out_put(o, esc, 6);
		} else {
			md_out_put(o, s, 1);
		}
	}
	md_out_put(o, "\"", 1);
}

static void
md_out_shell(struct md_out *o, const char *name, const char *value)
{
	md_out_str(o, name);
	md_out_put(o, "='", 2);
	for (const char *s = value; *s; s++) {
		if (*s == '\'')
			md_out_put(o, "'\\''", 4);
		else
			md_out_put(o, s, 1);
	}
	md_out_put(o, "'\n", 2);
}

int
md_format_parse(const char *s, enum md_format *ret)
{
	if (s && strcmp(s, "json") == 0)
		*ret = MD_FORMAT_JSON;
	else if (s && strcmp(s, "env") == 0)
		*ret = MD_FORMAT_ENV;
	else if (s && strcmp(s, "kubelet-flags") == 0)
		*ret = MD_FORMAT_KUBELET_FLAGS;
	else
		return ERR_INVALID;
	return 0;
}

static int
md_format_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

enum md_label_status
md_format_label_value(const char *in, char *out, size_t cap)
{
	size_t n = 0, max = cap - 1 < MD_LABEL_VALUE_MAX - 1 ? cap - 1 : MD_LABEL_VALUE_MAX - 1;
	int changed = 0, run = 0;

	out[0] = '\0';
	if (in == NULL || *in == '\0')
		return MD_LABEL_ABSENT;
	for (const char *s = in; *s; s++) {
		char c = *s;
		if (md_format_alnum(c) || c == '-' || c == '_' || c == '.') {
			run = 0;
		} else {
			changed = 1;
			if (run)
				continue;
			run = 1;
			c = '-';
		}
		/* nothing may start with a non-alphanumeric */
		if (n == 0 && !md_format_alnum(c)) {
			changed = 1;
			continue;
		}
		if (n == max) {
			changed = 1;
			break;
		}
		out[n++] = c;
	}
	while (n > 0 && !md_format_alnum(out[n - 1])) {
		n--;
		changed = 1;
	}
	out[n] = '\0';
	if (n == 0)
		return MD_LABEL_OMITTED;
	return changed ? MD_LABEL_SANITIZED : MD_LABEL_OK;
}

void
md_format_labels(const struct md_instance *in, struct md_label out[MD_LABELS])
{
	const char *keys[MD_LABELS] = { MD_LABEL_ZONE, MD_LABEL_REGION, MD_LABEL_INSTANCE_TYPE };
	const char *raw[MD_LABELS] = { in->zone, in->region, in->instance_type };

	for (size_t i = 0; i < MD_LABELS; i++) {
		out[i].key = keys[i];
		out[i].raw = raw[i];
		out[i].status = md_format_label_value(raw[i], out[i].value, sizeof(out[i].value));
	}
}

static const char *
md_format_first(const struct md_instance *in, enum md_addr_type t, int family)
{
	for (size_t i = 0; i < in->n_addresses; i++)
		if (in->addresses[i].type == t &&
		    md_build_ip_family(in->addresses[i].address) == family)
			return in->addresses[i].address;
	return NULL;
}

void
md_format_node_ip(const struct md_instance *in, char *buf, size_t cap)
{
	const char *v4 = md_format_first(in, MD_ADDR_INTERNAL_IP, 4);
	const char *v6 = md_format_first(in, MD_ADDR_INTERNAL_IP, 6);

	if (v4 == NULL)
		v4 = md_format_first(in, MD_ADDR_EXTERNAL_IP, 4);
	if (v6 == NULL)
		v6 = md_format_first(in, MD_ADDR_EXTERNAL_IP, 6);
	snprintf(buf, cap, "%s%s%s", v4 ? v4 : "", v4 && v6 ? "," : "", v6 ? v6 : "");
}

int
md_format_shell_quote(const char *in, char *out, size_t cap)
{
	struct md_out o = { out, cap, 0, 0 };

	if (cap == 0)
		return ERR_TOO_LARGE;
	out[0] = '\0';
	md_out_put(&o, "'", 1);
	for (const char *s = in; *s; s++) {
		if (*s == '\'')
			md_out_put(&o, "'\\''", 4);
		else
			md_out_put(&o, s, 1);
	}
	md_out_put(&o, "'", 1);
	return o.over ? ERR_TOO_LARGE : 0;
}

/* md_format_list joins the addresses of one type with commas. */
static void
md_format_list(const struct md_instance *in, enum md_addr_type t, char *buf, size_t cap)
{
	struct md_out o = { buf, cap, 0, 0 };

	buf[0] = '\0';
	for (size_t i = 0; i < in->n_addresses; i++) {
		if (in->addresses[i].type != t)
			continue;
		if (o.len)
			md_out_put(&o, ",", 1);
		md_out_str(&o, in->addresses[i].address);
	}
}

/* md_format_label_list writes "key=value,key=value" for the usable labels. */
static void
md_format_label_list(const struct md_label *l, char *buf, size_t cap)
{
	struct md_out o = { buf, cap, 0, 0 };

	buf[0] = '\0';
	for (size_t i = 0; i < MD_LABELS; i++) {
		if (l[i].status != MD_LABEL_OK && l[i].status != MD_LABEL_SANITIZED)
			continue;
		if (o.len)
			md_out_put(&o, ",", 1);
		md_out_str(&o, l[i].key);
		md_out_put(&o, "=", 1);
		md_out_str(&o, l[i].value);
	}
}

static void
md_format_json(const struct md_instance *in, const struct md_label *labels,
    const char *node_ip, struct md_out *o)
{
	const struct { const char *key, *value; } f[] = {
		{ "cloud", md_cloud_name(in->cloud) },
		{ "source", md_source_name(in->source) },
		{ "providerID", in->provider_id },
		{ "instanceID", in->instance_id },
		{ "name", in->name },
		{ "hostname", in->hostname },
		{ "instanceType", in->instance_type },
		{ "zone", in->zone },
		{ "region", in->region },
	};
	int first = 1;

	md_out_str(o, "{\n");
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		md_out_str(o, "  ");
		md_out_json(o, f[i].key);
		md_out_str(o, ": ");
		md_out_json(o, f[i].value);
		md_out_str(o, ",\n");
	}
	md_out_str(o, "  \"addresses\": [");
	for (size_t i = 0; i < in->n_addresses; i++) {
		md_out_str(o, i ? ",\n    {\"type\": " : "\n    {\"type\": ");
		md_out_json(o, md_addr_type_name(in->addresses[i].type));
		md_out_str(o, ", \"address\": ");
		md_out_json(o, in->addresses[i].address);
		md_out_str(o, "}");
	}
	md_out_str(o, in->n_addresses ? "\n  ],\n" : "],\n");
	md_out_str(o, "  \"nodeIP\": ");
	md_out_json(o, node_ip);
	md_out_str(o, ",\n  \"labels\": {");
	for (size_t i = 0; i < MD_LABELS; i++) {
		if (labels[i].status != MD_LABEL_OK && labels[i].status != MD_LABEL_SANITIZED)
			continue;
		md_out_str(o, first ? "\n    " : ",\n    ");
		md_out_json(o, labels[i].key);
		md_out_str(o, ": ");
		md_out_json(o, labels[i].value);
		first = 0;
	}
	md_out_str(o, first ? "}\n}\n" : "\n  }\n}\n");
}

static void
md_format_env(const struct md_instance *in, const char *labels, const char *node_ip,
    struct md_out *o)
{
	static const struct { const char *name; enum md_addr_type type; } lists[] = {
		{ "BOOTCCM_INTERNAL_IPS", MD_ADDR_INTERNAL_IP },
		{ "BOOTCCM_EXTERNAL_IPS", MD_ADDR_EXTERNAL_IP },
		{ "BOOTCCM_INTERNAL_DNS", MD_ADDR_INTERNAL_DNS },
		{ "BOOTCCM_EXTERNAL_DNS", MD_ADDR_EXTERNAL_DNS },
	};
	char list[MD_ADDRS_MAX * (MD_NAME_MAX + 1)];

	md_out_shell(o, "BOOTCCM_CLOUD", md_cloud_name(in->cloud));
	md_out_shell(o, "BOOTCCM_SOURCE", md_source_name(in->source));
	md_out_shell(o, "BOOTCCM_PROVIDER_ID", in->provider_id);
	md_out_shell(o, "BOOTCCM_INSTANCE_ID", in->instance_id);
	md_out_shell(o, "BOOTCCM_NAME", in->name);
	md_out_shell(o, "BOOTCCM_HOSTNAME", in->hostname);
	md_out_shell(o, "BOOTCCM_INSTANCE_TYPE", in->instance_type);
	md_out_shell(o, "BOOTCCM_ZONE", in->zone);
	md_out_shell(o, "BOOTCCM_REGION", in->region);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		md_format_list(in, lists[i].type, list, sizeof(list));
		md_out_shell(o, lists[i].name, list);
	}
	md_out_shell(o, "BOOTCCM_NODE_IP", node_ip);
	md_out_shell(o, "BOOTCCM_NODE_LABELS", labels);
}

static void
md_format_flags(const struct md_instance *in, const char *labels, const char *node_ip,
    struct md_out *o)
{
	/* one line of words an installer may split on blanks: the values hold
	 * no blanks, quotes or glob characters (providerID segments are
	 * checked for that, IPs are canonical, labels sanitized) */
	md_out_str(o, "--provider-id=");
	md_out_str(o, in->provider_id);
	if (*node_ip) {
		md_out_str(o, " --node-ip=");
		md_out_str(o, node_ip);
	}
	if (*labels) {
		md_out_str(o, " --node-labels=");
		md_out_str(o, labels);
	}
	md_out_str(o, "\n");
}

int
md_format_write(const struct md_instance *in, enum md_format f, char *buf, size_t cap,
    struct errbuf *e)
{
	struct md_label labels[MD_LABELS];
	char node_ip[2 * MD_NAME_MAX], label_list[MD_LABELS * 128];
	struct md_out o = { buf, cap, 0, 0 };

	if (cap == 0)
		return errbuf_set(e, ERR_TOO_LARGE, "no room for the output");
	buf[0] = '\0';
	md_format_labels(in, labels);
	md_format_label_list(labels, label_list, sizeof(label_list));
	md_format_node_ip(in, node_ip, sizeof(node_ip));
	switch (f) {
	case MD_FORMAT_JSON:
		md_format_json(in, labels, node_ip, &o);
		break;
	case MD_FORMAT_ENV:
		md_format_env(in, label_list, node_ip, &o);
		break;
	case MD_FORMAT_KUBELET_FLAGS:
		md_format_flags(in, label_list, node_ip, &o);
		break;
	}
	if (o.over)
		return errbuf_set(e, ERR_TOO_LARGE, "the output is larger than %zu bytes", cap);
	return (int)o.len;
}
