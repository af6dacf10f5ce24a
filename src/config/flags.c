/* flags.c - pflag-compatible command-line parsing. */
#include "config/flags.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/duration.h"
#include "base/numparse.h"
#include "base/xalloc.h"

int
flags_parse_bool(const char *s)
{
	static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True" };
	static const char *const f[] = { "0", "f", "F", "FALSE", "false", "False" };

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (strcmp(s, t[i]) == 0)
			return 1;
		if (strcmp(s, f[i]) == 0)
			return 0;
	}
	return ERR_INVALID;
}

struct flag *
flags_find(struct flag *flags, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(flags[i].name, name) == 0)
			return &flags[i];
	return NULL;
}

/* flags_find_short returns the flag called c, or "help" for 'h' (every
 * Kubernetes component takes -h for --help). */
static struct flag *
flags_find_short(struct flag *flags, size_t n, char c)
{
	char name[2] = { c, '\0' };
	struct flag *f = flags_find(flags, n, name);

	return f == NULL && c == 'h' ? flags_find(flags, n, "help") : f;
}

/* flag_store parses value into f's variable. */
static int
flag_store(struct flag *f, const char *value, struct errbuf *e)
{
	char *end;
	int r;

	switch (f->type) {
	case FLAG_BOOL:
		if ((r = flags_parse_bool(value)) < 0)
			return errbuf_set(e, ERR_INVALID,
			    "invalid argument \"%s\" for \"--%s\" flag: not a boolean",
			    value, f->name);
		*(int *)f->ptr = r;
		return 0;
	case FLAG_INT: {
		int64_t v;
		if (numparse(value, NUMPARSE_SIGN | NUMPARSE_PREFIX, INT_MIN, INT_MAX, &v, NULL) < 0)
			return errbuf_set(e, ERR_INVALID,
			    "invalid argument \"%s\" for \"--%s\" flag: not an integer",
			    value, f->name);
		*(int *)f->ptr = (int)v;
		return 0;
	}
	case FLAG_FLOAT: {
		double v;
		errno = 0;
		v = strtod(value, &end);
		if (*value == '\0' || *end != '\0' || errno != 0 || !isfinite(v))
			return errbuf_set(e, ERR_INVALID,
			    "invalid argument \"%s\" for \"--%s\" flag: not a number",
			    value, f->name);
		*(double *)f->ptr = v;
		return 0;
	}
	case FLAG_STRING:
		free(*(char **)f->ptr);
		*(char **)f->ptr = xstrdup(value);
		return 0;
	case FLAG_STRINGS: {
		char **p = f->ptr, *old = *p;
		*p = f->set && old != NULL && *old != '\0' ? xasprintf("%s,%s", old, value) :
		    xstrdup(value);
		free(old);
		return 0;
	}
	case FLAG_DURATION: {
		int64_t ns;
		if (duration_parse(value, &ns) < 0)
			return errbuf_set(e, ERR_INVALID,
			    "invalid argument \"%s\" for \"--%s\" flag: not a duration "
			    "(examples: 300ms, 15s, 5m, 1h30m)", value, f->name);
		*(int64_t *)f->ptr = ns;
		return 0;
	}
	}
	return ERR_INTERNAL;
}

int
flags_value_is(const struct flag *f, const char *text)
{
	union { int i; double d; char *s; int64_t ns; } v = { 0 };
	struct flag tmp = *f;
	int same = 0;

	tmp.ptr = &v;
	if (flag_store(&tmp, text, NULL) < 0)
		return 0;
	switch (f->type) {
	case FLAG_BOOL:
	case FLAG_INT:
		same = v.i == *(int *)f->ptr;
		break;
	case FLAG_FLOAT:
		same = v.d == *(double *)f->ptr;
		break;
	case FLAG_STRING:
	case FLAG_STRINGS: {
		const char *cur = *(char **)f->ptr;
		same = strcmp(v.s, cur ? cur : "") == 0;
		free(v.s);
		break;
	}
	case FLAG_DURATION:
		same = v.ns == *(int64_t *)f->ptr;
		break;
	}
	return same;
}

int
flags_defaults(struct flag *flags, size_t n, struct errbuf *e)
{
	for (size_t i = 0; i < n; i++) {
		struct flag *f = &flags[i];
		int r;
		if (f->def == NULL) {
			switch (f->type) {
			case FLAG_BOOL: case FLAG_INT: *(int *)f->ptr = 0; break;
			case FLAG_FLOAT: *(double *)f->ptr = 0; break;
			case FLAG_STRING: case FLAG_STRINGS:
				free(*(char **)f->ptr);
				*(char **)f->ptr = NULL;
				break;
			case FLAG_DURATION: *(int64_t *)f->ptr = 0; break;
			}
			continue;
		}
		if ((r = flag_store(f, f->def, e)) < 0)
			return errbuf_prefix(e, r, "default of --%s", f->name);
		f->set = 0;
	}
	return 0;
}

int
flags_parse(struct flag *flags, size_t n, int argc, char **argv, int first,
    int *ret_rest, struct errbuf *e)
{
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *value = NULL;
		char nbuf[128];
		size_t nlen;
		struct flag *f;
		int r;

		if (strcmp(a, "--") == 0) {
			if (ret_rest == NULL && i + 1 < argc)
				return errbuf_set(e, ERR_INVALID, "unexpected argument \"%s\"",
				    argv[i + 1]);
			if (ret_rest)
				*ret_rest = i + 1;
			return 0;
		}
		if (a[0] != '-' || a[1] == '\0') {
			if (ret_rest) {
				*ret_rest = i;
				return 0;
			}
			return errbuf_set(e, ERR_INVALID, "unexpected argument \"%s\"", a);
		}
		if (a[1] == '-') {
			name = a + 2;
		} else {
			name = a + 1;
			/* shorthand: only one-letter flags, pflag's -v2 form included */
			if (name[1] != '\0' && name[1] != '=') {
				f = flags_find_short(flags, n, name[0]);
				if (f == NULL || f->type == FLAG_BOOL)
					return errbuf_set(e, ERR_INVALID,
					    "unknown shorthand flag: '%c' in %s", name[0], a);
				if ((r = flag_store(f, name + 1, e)) < 0)
					return r;
				f->set = 1;
				continue;
			}
		}
		eq = strchr(name, '=');
		nlen = eq ? (size_t)(eq - name) : strlen(name);
		if (nlen == 0 || nlen >= sizeof(nbuf) || name[0] == '-')
			return errbuf_set(e, ERR_INVALID, "bad flag syntax: %s", a);
		memcpy(nbuf, name, nlen);
		nbuf[nlen] = '\0';
		f = a[1] == '-' ? flags_find(flags, n, nbuf) :
		    nlen == 1 ? flags_find_short(flags, n, nbuf[0]) : NULL;
		if (f == NULL)
			return errbuf_set(e, ERR_INVALID, "unknown flag: %s%s",
			    a[1] == '-' ? "--" : "-", nbuf);
		if (eq) {
			value = eq + 1;
		} else if (f->type == FLAG_BOOL) {
			value = "true";
		} else {
			if (i + 1 >= argc)
				return errbuf_set(e, ERR_INVALID,
				    "flag needs an argument: --%s", nbuf);
			value = argv[++i];
		}
		if ((r = flag_store(f, value, e)) < 0)
			return r;
		f->set = 1;
	}
	if (ret_rest)
		*ret_rest = argc;
	return 0;
}

static const char *
flag_type_name(enum flag_type t)
{
	switch (t) {
	case FLAG_BOOL: return "";
	case FLAG_INT: return " int";
	case FLAG_FLOAT: return " float";
	case FLAG_STRING: return " string";
	case FLAG_STRINGS: return " strings";
	case FLAG_DURATION: return " duration";
	}
	return "";
}

void
flags_usage(const struct flag *flags, size_t n, FILE *out)
{
	for (size_t i = 0; i < n; i++) {
		const struct flag *f = &flags[i];
		char head[160];
		if (strcmp(f->name, "help") == 0)
			snprintf(head, sizeof(head), "  -h, --%s%s", f->name,
			    flag_type_name(f->type));
		else
			snprintf(head, sizeof(head), "  %s%s%s", strlen(f->name) == 1 ? "-" : "--",
			    f->name, flag_type_name(f->type));
		fprintf(out, "%-48s %s", head, f->usage);
		if (f->def && *f->def && !(f->type == FLAG_BOOL && strcmp(f->def, "false") == 0)) {
			if (f->type == FLAG_STRING || f->type == FLAG_STRINGS)
				fprintf(out, " (default \"%s\")", f->def);
			else
				fprintf(out, " (default %s)", f->def);
		}
		fputc('\n', out);
	}
}

void
flags_free(struct flag *flags, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (flags[i].type == FLAG_STRING || flags[i].type == FLAG_STRINGS) {
			free(*(char **)flags[i].ptr);
			*(char **)flags[i].ptr = NULL;
		}
	}
}
