/* duration.c - Go's time.Duration text: ParseDuration and String. */
#include "base/duration.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"

/* One unit of a Go duration and its size in nanoseconds. */
struct duration_unit {
	const char *name;
	int64_t ns;
};

static const struct duration_unit duration_units[] = {
	{ "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 }, { "\xce\xbcs", 1000 },
	{ "ms", 1000000 }, { "s", 1000000000LL }, { "m", 60 * 1000000000LL },
	{ "h", 3600 * 1000000000LL },
};

int
duration_parse(const char *s, int64_t *ret_ns)
{
	const char *p = s;
	int neg = 0;
	uint64_t total = 0;

	if (s == NULL || *s == '\0')
		return ERR_INVALID;
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (strcmp(p, "0") == 0) {
		*ret_ns = 0;
		return 0;
	}
	if (*p == '\0')
		return ERR_INVALID;
	while (*p) {
		uint64_t whole = 0;
		double frac = 0, scale = 1;
		int digits = 0;
		const struct duration_unit *u = NULL;
		size_t ulen = 0;

		while (*p >= '0' && *p <= '9') {
			if (whole > (UINT64_MAX - 9) / 10)
				return ERR_INVALID;
			whole = whole * 10 + (uint64_t)(*p++ - '0');
			digits++;
		}
		if (*p == '.') {
			p++;
			while (*p >= '0' && *p <= '9') {
				if (scale < 1e18) {
					scale *= 10;
					frac = frac * 10 + (*p - '0');
				}
				p++;
				digits++;
			}
		}
		if (digits == 0)
			return ERR_INVALID;
		for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
			size_t l = strlen(duration_units[i].name);
			/* longest match: "ms" before "m" */
			if (strncmp(p, duration_units[i].name, l) == 0 && l > ulen) {
				u = &duration_units[i];
				ulen = l;
			}
		}
		if (u == NULL)
			return ERR_INVALID;
		p += ulen;
		if (whole > (uint64_t)INT64_MAX / (uint64_t)u->ns)
			return ERR_INVALID;
		uint64_t v = whole * (uint64_t)u->ns;
		v += (uint64_t)(frac * ((double)u->ns / scale));
		if (v > (uint64_t)INT64_MAX || total > (uint64_t)INT64_MAX - v)
			return ERR_INVALID;
		total += v;
	}
	*ret_ns = neg ? -(int64_t)total : (int64_t)total;
	return 0;
}

/* duration_frac writes v / 10^prec with trailing zeros dropped ("1.5", "2"). */
static int
duration_frac(char *buf, size_t len, uint64_t v, int prec)
{
	uint64_t div = 1;
	for (int i = 0; i < prec; i++)
		div *= 10;
	uint64_t whole = v / div, frac = v % div;
	if (frac == 0)
		return snprintf(buf, len, "%" PRIu64, whole);
	char f[32];
	snprintf(f, sizeof(f), "%0*" PRIu64, prec, frac);
	for (size_t i = strlen(f); i > 0 && f[i - 1] == '0'; i--)
		f[i - 1] = '\0';
	return snprintf(buf, len, "%" PRIu64 ".%s", whole, f);
}

void
duration_format(int64_t ns, char *buf, size_t len)
{
	uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	const char *sign = ns < 0 ? "-" : "";
	char num[64];

	if (len == 0)
		return;
	if (u == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	if (u < 1000) {
		snprintf(buf, len, "%s%" PRIu64 "ns", sign, u);
	} else if (u < 1000000) {
		duration_frac(num, sizeof(num), u, 3);
		snprintf(buf, len, "%s%s\xc2\xb5s", sign, num);
	} else if (u < (uint64_t)NS_PER_S) {
		duration_frac(num, sizeof(num), u, 6);
		snprintf(buf, len, "%s%sms", sign, num);
	} else {
		uint64_t h = u / (3600 * (uint64_t)NS_PER_S);
		uint64_t rest = u % (3600 * (uint64_t)NS_PER_S);
		uint64_t m = rest / (60 * (uint64_t)NS_PER_S);
		duration_frac(num, sizeof(num), rest % (60 * (uint64_t)NS_PER_S), 9);
		if (h)
			snprintf(buf, len, "%s%" PRIu64 "h%" PRIu64 "m%ss", sign, h, m, num);
		else if (m)
			snprintf(buf, len, "%s%" PRIu64 "m%ss", sign, m, num);
		else
			snprintf(buf, len, "%s%ss", sign, num);
	}
}

int
duration_check(const char *flag, int64_t ns, int64_t min_ns, int64_t max_ns,
    struct errbuf *e)
{
	char v[32], lo[48], hi[32];

	if (ns >= min_ns && ns <= max_ns)
		return 0;
	duration_format(ns, v, sizeof(v));
	duration_format(max_ns, hi, sizeof(hi));
	if (min_ns <= 0) {
		snprintf(lo, sizeof(lo), "zero or more");
	} else if (min_ns == 1) {
		snprintf(lo, sizeof(lo), "greater than zero");
	} else {
		memcpy(lo, "at least ", 9);
		duration_format(min_ns, lo + 9, sizeof(lo) - 9);
	}
	return errbuf_set(e, ERR_INVALID, "--%s %s: must be %s and at most %s", flag, v, lo, hi);
}
