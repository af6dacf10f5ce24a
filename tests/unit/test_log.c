/* test_log.c - klog text format, JSON lines, verbosity, redaction. */
#include <json-c/json.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "base/log.h"

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
	CHECK_STR(out, "version: Bearer [redacted]\nuser: [redacted]\n");
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

/* redacted returns log_redact_str(s), or s itself when nothing was found,
 * in a static buffer. */
static const char *
redacted(const char *s)
{
	static char buf[4096];
	char *r = log_redact_str(s);

	snprintf(buf, sizeof(buf), "%s", r ? r : s);
	free(r);
	return buf;
}

TEST(substrings_of_eight_bytes_are_redacted)
{
	log_clear_secrets();
	log_add_secret("abcdefghijklmnop");
	/* a tail, a head, a middle piece of at least LOG_SECRET_GRAM bytes */
	CHECK_STR(redacted("x ghijklmnop y"), "x [redacted] y");
	CHECK_STR(redacted("Bearer abcdefgh..."), "Bearer [redacted]...");
	CHECK_STR(redacted("[cdefghij]"), "[[redacted]]");
	/* a token split in two by the echo: both halves go */
	CHECK_STR(redacted("abcdefgh\nijklmnop"), "[redacted]\n[redacted]");
	/* seven bytes are not enough */
	CHECK_STR(redacted("-bcdefgh-"), "-bcdefgh-");
	CHECK(log_redact_str("nothing secret here") == NULL);
	CHECK(log_redact_str(NULL) == NULL);
	log_clear_secrets();
	CHECK_STR(redacted("x ghijklmnop y"), "x ghijklmnop y");
}

TEST(short_secrets_only_whole)
{
	log_clear_secrets();
	log_add_secret("pa55");
	log_add_secret("abc");   /* under LOG_SECRET_MIN: ignored */
	CHECK_STR(redacted("user:pa55@host abc"), "user:[redacted]@host abc");
	CHECK_STR(redacted("pa5 a55"), "pa5 a55");
	log_clear_secrets();
}

TEST(overlapping_and_adjacent_secrets_are_one_mark)
{
	log_clear_secrets();
	log_add_secret("aaaabbbbcccc");
	log_add_secret("bbbbccccdddd");
	CHECK_STR(redacted("<aaaabbbbccccdddd>"), "<[redacted]>");
	log_add_secret("wxyz");
	CHECK_STR(redacted("wxyzwxyz and aaaabbbbwxyz"), "[redacted] and [redacted]");
	log_clear_secrets();
}

TEST(marks_never_split_utf8)
{
	log_clear_secrets();
	/* the windows "bcdefg\xc3\xa9"'s last bytes reach into the é */
	log_add_secret("abcdefg\xc3\xa9");
	CHECK_STR(redacted("abcdefg\xc3\xa9!"), "[redacted]!");
	log_clear_secrets();
	log_add_secret("\xa9xyzxyzxy");  /* a secret starting inside a character */
	CHECK_STR(redacted("\xc3\xa9xyzxyzxy."), "[redacted].");
	log_clear_secrets();
}

TEST(pem_keys_by_their_body)
{
	static const char pem[] =
	    "-----BEGIN PRIVATE KEY-----\n"
	    "MC4CAQAwBQYDK2VwBCIEIKlq0QVZ4bB3a4c9o7mWmC0kUqYxK3lNn6tHsl2fV8Qe\n"
	    "-----END PRIVATE KEY-----\n";
	log_clear_secrets();
	log_add_secret(pem);
	/* the armor every PEM file shares stays readable */
	CHECK_STR(redacted("-----BEGIN CERTIFICATE-----"), "-----BEGIN CERTIFICATE-----");
	CHECK_STR(redacted("a PRIVATE KEY is expected"), "a PRIVATE KEY is expected");
	/* any piece of the body goes, with or without its line breaks */
	CHECK_STR(redacted("key: ...lNn6tHsl2f..."), "key: ...[redacted]...");
	CHECK(strstr(redacted(pem), "MC4CAQAw") == NULL);
	log_clear_secrets();
}

TEST(secret_count_is_capped_oldest_first)
{
	char s[32];

	log_clear_secrets();
	log_add_secret("QWERTYUIOPASDF");
	for (int i = 1; i <= LOG_SECRETS_MAX; i++) {
		snprintf(s, sizeof(s), "zz%03dzzzzzzzz", i);
		log_add_secret(s);
	}
	/* the first one was forgotten, the others are kept */
	CHECK_STR(redacted("QWERTYUIOPASDF"), "QWERTYUIOPASDF");
	CHECK_STR(redacted("zz001zzzzzzzz"), "[redacted]");
	snprintf(s, sizeof(s), "<zz%03dzzzzzzzz>", LOG_SECRETS_MAX);
	CHECK_STR(redacted(s), "<[redacted]>");
	log_clear_secrets();
}

TEST(redaction_is_linear_in_the_text)
{
	/* a naive search would compare every byte of a long secret at every
	 * byte of the text: 4 KiB x 4 MiB here, minutes; the index takes a
	 * bounded number of lookups per byte */
	static char sec[4097];
	size_t n = 4u * 1024 * 1024 - 64;
	char *text = malloc(n + 1);
	struct timespec a, b;
	int p[2];

	CHECK(text != NULL);
	log_clear_secrets();
	memset(sec, 'a', sizeof(sec) - 1);
	sec[sizeof(sec) - 2] = 'b';
	log_add_secret(sec);
	for (int i = 0; i < LOG_SECRETS_MAX - 1; i++) {
		char s[32];
		snprintf(s, sizeof(s), "aaaaaaa%dzzz", i);
		log_add_secret(s);
	}
	memset(text, 'a', n);
	text[n] = '\0';
	CHECK(pipe(p) == 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	char *r = log_redact_str(text);
	clock_gettime(CLOCK_MONOTONIC, &b);
	close(p[0]);
	close(p[1]);
	CHECK(r != NULL);
	CHECK_STR(r, "[redacted]");
	free(r);
	free(text);
	CHECK((b.tv_sec - a.tv_sec) < 20);
	log_clear_secrets();
}

TEST(escape_for_a_terminal)
{
	char out[64];

	CHECK_STR(log_escape("line\r\nnext\tx", out, sizeof(out)), "line\\r\\nnext\\tx");
	CHECK_STR(log_escape("bell\a esc\x1b[2J del\x7f", out, sizeof(out)),
	    "bell\\x07 esc\\x1b[2J del\\x7f");
	/* raw bytes that are not UTF-8; legitimate UTF-8 kept; C1 controls */
	CHECK_STR(log_escape("\xff\xfe ok \xc3\xa9\xe2\x82\xac \xc2\x9b", out, sizeof(out)),
	    "\\xff\\xfe ok \xc3\xa9\xe2\x82\xac \\xc2\\x9b");
	CHECK_STR(log_escape("\xc3", out, sizeof(out)), "\\xc3");   /* cut short */
	CHECK_STR(log_escape("\xed\xa0\x80", out, sizeof(out)), "\\xed\\xa0\\x80"); /* surrogate */
	/* idempotent */
	CHECK_STR(log_escape("a\\nb", out, sizeof(out)), "a\\nb");
	CHECK_STR(log_escape(NULL, out, sizeof(out)), "");
	/* cut with "..." at a character, never past cap */
	CHECK_STR(log_escape("0123456789", out, 8), "0123...");
	CHECK_STR(log_escape("0123456", out, 8), "0123456");
	CHECK_STR(log_escape("ab\n\n\n", out, 8), "ab\\n...");
	CHECK_STR(log_escape("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", out, 8),
	    "\xe2\x82\xac...");
}

TEST_MAIN()
