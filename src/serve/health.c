/* health.c - the endpoint's health checks (health.h). */
#include "serve/health.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/dynbuf.h"
#include "serve/httpreq.h"

#define SERVE_BODY_MAX (64 * 1024) /* bytes: a health body; ours, so never reached */

static pthread_mutex_t serve_checks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct serve_check serve_healthz_checks[SERVE_CHECKS_MAX];
static struct serve_check serve_readyz_checks[SERVE_CHECKS_MAX];
static size_t serve_healthz_n, serve_readyz_n;

static int
serve_ping(void *arg, struct errbuf *e)
{
	(void)arg;
	(void)e;
	return 0;
}

static int
serve_check_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n >= SERVE_CHECK_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.'))
			return 0;
	}
	return 1;
}

static int
serve_add(struct serve_check *list, size_t *n, const char *name, serve_check_fn fn,
    void *arg)
{
	int r = 0;

	if (!serve_check_name_ok(name) || fn == NULL)
		return ERR_INVALID;
	if (strcmp(name, "ping") == 0)
		return ERR_EXISTS;
	pthread_mutex_lock(&serve_checks_lock);
	/* /readyz runs both kinds, so a name must be unique across both */
	for (size_t i = 0; i < serve_healthz_n && r == 0; i++)
		if (strcmp(serve_healthz_checks[i].name, name) == 0)
			r = ERR_EXISTS;
	for (size_t i = 0; i < serve_readyz_n && r == 0; i++)
		if (strcmp(serve_readyz_checks[i].name, name) == 0)
			r = ERR_EXISTS;
	if (r == 0 && *n == SERVE_CHECKS_MAX)
		r = ERR_TOO_LARGE;
	if (r == 0) {
		snprintf(list[*n].name, sizeof(list[*n].name), "%s", name);
		list[*n].fn = fn;
		list[*n].arg = arg;
		(*n)++;
	}
	pthread_mutex_unlock(&serve_checks_lock);
	return r;
}

int
serve_add_healthz(const char *name, serve_check_fn fn, void *arg)
{
	return serve_add(serve_healthz_checks, &serve_healthz_n, name, fn, arg);
}

int
serve_add_readyz(const char *name, serve_check_fn fn, void *arg)
{
	return serve_add(serve_readyz_checks, &serve_readyz_n, name, fn, arg);
}

size_t
serve_health_checks(enum serve_kind kind, struct serve_check *out)
{
	size_t n = 0;

	snprintf(out[n].name, sizeof(out[n].name), "ping");
	out[n].fn = serve_ping;
	out[n++].arg = NULL;
	pthread_mutex_lock(&serve_checks_lock);
	if (kind != SERVE_LIVEZ)
		for (size_t i = 0; i < serve_healthz_n; i++)
			out[n++] = serve_healthz_checks[i];
	if (kind == SERVE_READYZ)
		for (size_t i = 0; i < serve_readyz_n; i++)
			out[n++] = serve_readyz_checks[i];
	pthread_mutex_unlock(&serve_checks_lock);
	return n;
}

int
serve_health_render(const char *name, const struct serve_check *checks, size_t n,
    const char *query, char **ret, size_t *ret_len, char *failed, size_t failed_len)
{
	char excl[SERVE_EXCLUDES_MAX][SERVE_CHECK_NAME_MAX];
	int used[SERVE_EXCLUDES_MAX] = { 0 };
	char key[64], val[SERVE_CHECK_NAME_MAX];
	struct dynbuf out, log;
	size_t nexcl = 0, nfailed = 0;
	const char *q = query ? query : "";
	int verbose = 0, code;

	dynbuf_init(&out, SERVE_BODY_MAX);
	dynbuf_init(&log, SERVE_BODY_MAX);
	while (httpreq_query_next(&q, key, sizeof(key), val, sizeof(val))) {
		if (strcmp(key, "verbose") == 0)
			verbose = 1;
		else if (strcmp(key, "exclude") == 0 && nexcl < SERVE_EXCLUDES_MAX && val[0])
			snprintf(excl[nexcl++], sizeof(excl[0]), "%s", val);
	}
	for (size_t i = 0; i < n; i++) {
		struct errbuf e = { "" };
		size_t j;
		for (j = 0; j < nexcl; j++)
			if (strcmp(excl[j], checks[i].name) == 0)
				break;
		if (j < nexcl) {
			used[j] = 1;
			dynbuf_addf(&out, "[+]%s excluded: ok\n", checks[i].name);
			continue;
		}
		if (checks[i].fn(checks[i].arg, &e) < 0) {
			/* the reason is not for anonymous clients: it goes to the log */
			dynbuf_addf(&out, "[-]%s failed: reason withheld\n", checks[i].name);
			dynbuf_addf(&log, "%s%s: %s", nfailed ? "; " : "", checks[i].name,
			    e.msg[0] ? e.msg : "failed");
			nfailed++;
		} else {
			dynbuf_addf(&out, "[+]%s ok\n", checks[i].name);
		}
	}
	for (size_t j = 0, warned = 0; j < nexcl; j++) {
		if (used[j])
			continue;
		dynbuf_addf(&out, "%s\"%s\"", warned++ ? "," :
		    "warn: some health checks cannot be excluded: no matches for ", excl[j]);
	}
	for (size_t j = 0; j < nexcl; j++)
		if (!used[j]) {
			dynbuf_addstr(&out, "\n");
			break;
		}
	if (nfailed) {
		dynbuf_addf(&out, "%s check failed\n", name);
		code = 500;
	} else if (!verbose) {
		dynbuf_reset(&out);
		dynbuf_addstr(&out, "ok");
		code = 200;
	} else {
		dynbuf_addf(&out, "%s check passed\n", name);
		code = 200;
	}
	if (failed && failed_len)
		snprintf(failed, failed_len, "%s", dynbuf_ptr(&log));
	dynbuf_free(&log);
	*ret = dynbuf_take(&out, ret_len);
	return code;
}
