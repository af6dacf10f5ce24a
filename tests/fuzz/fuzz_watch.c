/* fuzz_watch.c - libFuzzer harness: the watch line splitter and event
 * decoder, and the LIST item splitter, on arbitrary bytes fed in chunks
 * whose size the first byte chooses; an event decoded keeping a Node's
 * fields only must come out (or fail) as the whole one does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/node.h"
#include "kube/watch.h"

#define FUZZ_LINE_MAX 1024  /* bytes: a small cap, so the fuzzer reaches it */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fuzz_line(const char *line, size_t len, void *arg)
{
	struct kube_watch_event ev;
	struct errbuf e = { "" };

	struct kube_watch_event kept;
	struct errbuf e2 = { "" };
	int r, r2;

	(void)arg;
	if (len == 0 || len > FUZZ_LINE_MAX || memchr(line, '\n', len) != NULL)
		abort();
	r = kube_watch_event_decode(line, len, NULL, &ev, &e);
	r2 = kube_watch_event_decode(line, len, kube_node_fields, &kept, &e2);
	if (r != r2 || (r < 0 && strcmp(e.msg, e2.msg) != 0))
		abort();
	if (r < 0) {
		if (e.msg[0] == '\0')
			abort();
		return 0;
	}
	if (ev.type != kept.type || ev.code != kept.code ||
	    (ev.resource_version == NULL) != (kept.resource_version == NULL) ||
	    (ev.resource_version && strcmp(ev.resource_version, kept.resource_version) != 0) ||
	    (ev.type == KUBE_WATCH_ERROR && (strcmp(ev.reason, kept.reason) != 0 ||
	    strcmp(ev.message, kept.message) != 0)))
		abort();
	kube_watch_event_free(&kept);
	if (ev.object == NULL || (unsigned)ev.type > KUBE_WATCH_ERROR ||
	    (ev.type == KUBE_WATCH_BOOKMARK && ev.resource_version == NULL) ||
	    (ev.resource_version && strlen(ev.resource_version) >= KUBE_WATCH_RV_MAX) ||
	    (ev.type == KUBE_WATCH_ERROR && (ev.reason == NULL || ev.message == NULL)))
		abort();
	kube_watch_event_free(&ev);
	return 0;
}

static int
fuzz_item(const char *item, size_t len, void *arg)
{
	json_object *o;
	struct errbuf e;

	(void)arg;
	if (len < 2 || len > FUZZ_LINE_MAX || item[0] != '{' || item[len - 1] != '}')
		abort();
	if (kube_watch_parse(item, len, &o, &e) == 0)
		json_object_put(o);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_watch_lines s;
	struct kube_watch_list l;
	struct errbuf e;
	char rv[KUBE_WATCH_RV_MAX], *cont = NULL;
	size_t step, off;
	int r = 0;

	if (size == 0)
		return 0;
	step = data[0] ? data[0] : size;
	data++;
	size--;

	kube_watch_lines_init(&s, FUZZ_LINE_MAX);
	for (off = 0; off < size && r == 0; off += step)
		r = kube_watch_lines_feed(&s, (const char *)data + off,
		    size - off < step ? size - off : step, fuzz_line, NULL, &e);
	if (r == 0)
		kube_watch_lines_finish(&s, fuzz_line, NULL, &e);
	kube_watch_lines_reset(&s);

	kube_watch_list_init(&l, FUZZ_LINE_MAX);
	for (r = 0, off = 0; off < size && r == 0; off += step)
		r = kube_watch_list_feed(&l, (const char *)data + off,
		    size - off < step ? size - off : step, fuzz_item, NULL, &e);
	if (r == 0 && kube_watch_list_finish(&l, rv, sizeof(rv), &cont, &e) == 0) {
		if (strlen(rv) == 0 || cont == NULL)
			abort();
		free(cont);
	}
	kube_watch_list_reset(&l);
	return 0;
}
