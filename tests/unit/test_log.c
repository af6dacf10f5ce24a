/* test_log.c - klog text format, JSON lines, verbosity, redaction. */
#include <json-c/json.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "log.h"

/* capture runs one log call with output going to a pipe and returns the line */
static char *
capture(void (*fn)(void))
{
	static char buf[LOG_LINE_MAX * 2];
	int p[2];
	ssize_t n;

	if (pipe(p) != 0)
		return NULL;
	log_init(log_enabled(5) ? 5 : 2, LOG_TEXT, p[1]);
	fn();
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void emit_info(void) { log_info(0, "Starting", "node", "cp-1", "n", "3", NULL); }
static void emit_quote(void) { log_warn("say \"hi\"\n", "k", "a\tb\x01", NULL); }
static void emit_v3(void) { log_info(3, "verbose", NULL); }
static void emit_secret(void) { log_error("failed", "detail", "token=s3cr3t-t0ken-value here", NULL); }
static void emit_long_secret(void)
{
	static char big[LOG_VALUE_MAX * 3];
	memset(big, 'a', sizeof(big) - 1);
	/* a secret straddling the value's cut-off point */
	memcpy(big + LOG_VALUE_MAX - 8, "s3cr3t-t0ken-value", 18);
	log_info(0, "big", "v", big, NULL);
}

TEST(klog_text_format)
{
	log_init(2, LOG_TEXT, 2);
	char *l = capture(emit_info);
	/* I1121 09:00:00.123456   12345 test_log.c:NN] "Starting" node="cp-1" n="3" */
	CHECK(l[0] == 'I');
	CHECK(l[5] == ' ' && l[8] == ':' && l[11] == ':' && l[14] == '.');
	CHECK_CONTAINS(l, " test_log.c:");
	CHECK_CONTAINS(l, "] \"Starting\" node=\"cp-1\" n=\"3\"\n");
}

TEST(quoting)
{
	char *l = capture(emit_quote);
	CHECK(l[0] == 'W');
	CHECK_CONTAINS(l, "\"say \\\"hi\\\"\\n\" k=\"a\\tb\\u0001\"");
}

TEST(verbosity_filters)
{
	log_init(2, LOG_TEXT, 2);
	CHECK(capture(emit_v3)[0] == '\0');
	log_init(5, LOG_TEXT, 2);
	CHECK_CONTAINS(capture(emit_v3), "\"verbose\"");
}

TEST(json_lines)
{
	int p[2];
	char buf[4096];
	CHECK(pipe(p) == 0);
	log_init(0, LOG_JSON, p[1]);
	log_info(0, "Initialized node", "node", "cp-1", NULL);
	log_error("boom", "err", "x\"y", NULL);
	close(p[1]);
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	CHECK(n > 0);
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	CHECK(nl != NULL);
	*nl = '\0';
	json_object *o = json_tokener_parse(buf);
	CHECK(o != NULL);
	json_object *v;
	CHECK(json_object_object_get_ex(o, "msg", &v));
	CHECK_STR(json_object_get_string(v), "Initialized node");
	CHECK(json_object_object_get_ex(o, "v", &v) && json_object_get_int(v) == 0);
	CHECK(json_object_object_get_ex(o, "ts", &v) && json_object_is_type(v, json_type_double));
	CHECK(json_object_object_get_ex(o, "caller", &v));
	CHECK_CONTAINS(json_object_get_string(v), "test_log.c:");
	CHECK(json_object_object_get_ex(o, "node", &v));
	CHECK_STR(json_object_get_string(v), "cp-1");
	json_object_put(o);
	json_object *o2 = json_tokener_parse(nl + 1);
	CHECK(o2 != NULL);
	CHECK(!json_object_object_get_ex(o2, "v", &v)); /* errors carry no v */
	CHECK(json_object_object_get_ex(o2, "err", &v));
	CHECK_STR(json_object_get_string(v), "x\"y");
	json_object_put(o2);
	log_init(2, LOG_TEXT, 2);
}

TEST(secrets_are_redacted)
{
	log_clear_secrets();
	log_add_secret("s3cr3t-t0ken-value");
	char *l = capture(emit_secret);
	CHECK(strstr(l, "s3cr3t") == NULL);
	CHECK_CONTAINS(l, "token=[redacted] here");
	l = capture(emit_long_secret);
	CHECK(strstr(l, "s3cr3t") == NULL);
	CHECK(strstr(l, "s3cr") == NULL);
	CHECK_CONTAINS(l, "[red"); /* the mark itself may be cut with the value */
	log_clear_secrets();
	l = capture(emit_secret);
	CHECK_CONTAINS(l, "s3cr3t-t0ken-value");
}

/* print_capture runs log_print into a pipe read by a thread-free loop: the
 * texts here fit in a pipe's buffer. */
static char *
print_capture(const char *text)
{
	static char buf[256 * 1024];
	int p[2];
	ssize_t n, off = 0;

	if (pipe(p) != 0)
		return NULL;
	if (log_print(p[1], "%s", text) != 0)
		return NULL;
	close(p[1]);
	while ((n = read(p[0], buf + off, sizeof(buf) - 1 - (size_t)off)) > 0)
		off += n;
	close(p[0]);
	buf[off] = '\0';
	return buf;
}

TEST(printed_output_is_redacted_and_never_cut)
{
	static char big[LOG_VALUE_MAX * 8];
	char *out;

	log_clear_secrets();
	log_add_secret("s3cr3t-t0ken-value");
	log_add_secret("abcd");
	out = print_capture("version: Bearer s3cr3t-t0ken-value\nuser: abcdabcd\n");
	CHECK_STR(out, "version: Bearer [redacted]\nuser: [redacted][redacted]\n");
	/* longer than any log value, secrets at both ends and across the
	 * point where a log value would be cut */
	memset(big, 'x', sizeof(big) - 1);
	memcpy(big, "abcd", 4);
	memcpy(big + LOG_VALUE_MAX - 8, "s3cr3t-t0ken-value", 18);
	memcpy(big + sizeof(big) - 5, "abcd", 4);
	out = print_capture(big);
	CHECK(strstr(out, "s3cr") == NULL && strstr(out, "abcd") == NULL);
	CHECK(strncmp(out, "[redacted]xxx", 13) == 0);
	CHECK(strlen(out) == sizeof(big) - 1 - 4 - 18 - 4 + 3 * 10);
	CHECK(strcmp(out + strlen(out) - 10, "[redacted]") == 0);
	log_clear_secrets();
	out = print_capture("user: abcd\n");
	CHECK_STR(out, "user: abcd\n");
}

TEST(huge_lines_stay_bounded_and_terminated)
{
	static char big[LOG_VALUE_MAX * 4];
	int p[2];
	static char buf[LOG_LINE_MAX * 2];
	memset(big, 'x', sizeof(big) - 1);
	CHECK(pipe(p) == 0);
	log_init(0, LOG_JSON, p[1]);
	log_info(0, "m", "a", big, "b", big, "c", big, "d", big, "e", big, "f", big,
	    "g", big, "h", big, "i", big, NULL);
	close(p[1]);
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	CHECK(n > 0 && n <= LOG_LINE_MAX);
	buf[n] = '\0';
	CHECK(buf[n - 1] == '\n');
	buf[n - 1] = '\0';
	json_object *o = json_tokener_parse(buf);
	CHECK(o != NULL); /* still one valid JSON object */
	json_object_put(o);
	log_init(2, LOG_TEXT, 2);
}

TEST_MAIN()
