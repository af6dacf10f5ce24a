/* fuzz_serve.c - libFuzzer harness: the serving endpoint's request parser
 * (httpreq) on arbitrary bytes, then the parsed query through the health
 * output and the Authorization header through the bearer token check. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/httpreq.h"
#include "serve/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fuzz_ok(void *arg, struct errbuf *e)
{
	(void)arg;
	(void)e;
	return 0;
}

static int
fuzz_fail(void *arg, struct errbuf *e)
{
	(void)arg;
	return errbuf_set(e, ERR_TRANSIENT, "failing");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct httpreq rq;
	struct serve_check checks[2] = {
		{ "ping", fuzz_ok, NULL },
		{ "informer-sync", fuzz_fail, NULL },
	};
	struct errbuf e;
	char *body = NULL, failed[256];
	size_t len = 0;
	const char *tok;
	int r;

	memset(&e, 0, sizeof(e));
	r = httpreq_parse((const char *)data, size, &rq, &e);
	if (r < 0) {
		if (e.msg[0] == '\0' || (r != ERR_INVALID && r != ERR_TOO_LARGE &&
		    r != ERR_UNSUPPORTED))
			abort();
		return 0;
	}
	if (r == 0) {
		/* incomplete: only below the cap */
		if (size >= HTTPREQ_MAX)
			abort();
		return 0;
	}
	if ((size_t)r > size || rq.path[0] != '/' || memchr(data, '\n', (size_t)r) == NULL ||
	    data[r - 1] != '\n')
		abort();
	if ((tok = httpreq_bearer_token(rq.has_authorization ? rq.authorization : NULL)) &&
	    (tok < rq.authorization || *tok == '\0' || strchr(tok, ' ')))
		abort();
	/* "informer-sync" fails: only ?exclude=informer-sync makes it a 200 */
	r = serve_health_render("healthz", checks, 2, rq.query, &body, &len, failed,
	    sizeof(failed));
	if ((r != 200 && r != 500) || body == NULL || strlen(body) != len)
		abort();
	if (r == 500 ? strstr(body, "[-]informer-sync failed: reason withheld\n") == NULL ||
	    strcmp(failed, "informer-sync: failing") != 0 :
	    strcmp(body, "ok") != 0 && strstr(body, "[+]informer-sync excluded: ok\n") == NULL)
		abort();
	free(body);
	return 0;
}
