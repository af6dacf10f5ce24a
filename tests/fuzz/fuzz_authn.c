/* fuzz_authn.c - libFuzzer harness: TokenReview and SubjectAccessReview
 * answers from the API server on arbitrary bytes, a SubjectAccessReview
 * built for each user a TokenReview answer yields, and the token scrub,
 * which must leave valid JSON valid. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/authn.h"
#include "base/jsonx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct authn_user u = { NULL, NULL };
	struct errbuf e;
	char *body = NULL, *copy;
	json_object *o;
	int r;

	memset(&e, 0, sizeof(e));
	r = authn_token_review_decode((const char *)data, size, &u, &e);
	if (r == 1) {
		if (u.name == NULL || u.info == NULL || u.name[0] == '\0')
			abort();
		if (authn_sar_body(&u, "get", "/metrics", &body, &e) != 0 || body == NULL)
			abort();
		free(body);
		authn_user_free(&u);
	} else if (r == 0 || r == ERR_INVALID || r == ERR_TOO_LARGE) {
		if (u.name != NULL || (r < 0 && e.msg[0] == '\0'))
			abort();
	} else {
		abort();
	}
	r = authn_sar_decode((const char *)data, size, &e);
	if (r != 0 && r != 1 && r != ERR_INVALID && r != ERR_TOO_LARGE)
		abort();
	if ((copy = malloc(size + 1)) == NULL)
		abort();
	memcpy(copy, data, size);
	copy[size] = '\0';
	authn_scrub_tokens(copy, size);
	if (jsonx_parse((const char *)data, size, 32, &o, NULL) == 0) {
		json_object_put(o);
		if (jsonx_parse(copy, size, 32, &o, NULL) != 0)
			abort();
		json_object_put(o);
	}
	free(copy);
	return 0;
}
