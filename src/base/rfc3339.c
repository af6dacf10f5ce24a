/* rfc3339.c - Go's RFC 3339 parsing and the API server's two time formats. */
#include "base/rfc3339.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"

/* rfc3339_days_from_civil counts days from 1970-01-01 to a proleptic
 * Gregorian date (Howard Hinnant's algorithm; no time zone database). */
static int64_t
rfc3339_days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
rfc3339_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int
rfc3339_days_in(int y, int m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		return 29;
	return days[m - 1];
}

static int
rfc3339_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* rfc3339_num reads two digits (or one when one_ok and no second follows)
 * at *p, advancing it; -1 when there is no number. */
static int
rfc3339_num(const char **p, int one_ok)
{
	const char *s = *p;

	if (!rfc3339_digit(s[0]))
		return -1;
	if (!rfc3339_digit(s[1])) {
		if (!one_ok)
			return -1;
		*p = s + 1;
		return s[0] - '0';
	}
	*p = s + 2;
	return (s[0] - '0') * 10 + (s[1] - '0');
}

int
rfc3339_parse(const char *s, int64_t *ret_sec, int32_t *ret_nsec)
{
	const char *p = s;
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	int32_t ns = 0;

	if (s == NULL)
		return ERR_INVALID;
	for (int i = 0; i < 4; i++)
		if (!rfc3339_digit(p[i]))
			return ERR_INVALID;
	y = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
	p += 4;
	if (*p++ != '-' || (mo = rfc3339_num(&p, 0)) < 0 || *p++ != '-' ||
	    (d = rfc3339_num(&p, 0)) < 0 || *p++ != 'T' ||
	    (h = rfc3339_num(&p, 1)) < 0 || *p++ != ':' ||
	    (mi = rfc3339_num(&p, 0)) < 0 || *p++ != ':' ||
	    (sec = rfc3339_num(&p, 0)) < 0)
		return ERR_INVALID;
	if (mo < 1 || mo > 12 || h > 23 || mi > 59 || sec > 59 || d < 1 ||
	    d > rfc3339_days_in(y, mo))
		return ERR_INVALID;
	if ((p[0] == '.' || p[0] == ',') && rfc3339_digit(p[1])) {
		int n = 0;
		for (p++; rfc3339_digit(*p); p++, n++)
			if (n < 9)
				ns = ns * 10 + (*p - '0');
		for (; n < 9; n++)
			ns *= 10;
	}
	if (*p == 'Z') {
		p++;
	} else {
		if (*p != '+' && *p != '-')
			return ERR_INVALID;
		sign = *p++ == '-' ? -1 : 1;
		if (!rfc3339_digit(p[0]) || !rfc3339_digit(p[1]) || p[2] != ':' ||
		    !rfc3339_digit(p[3]) || !rfc3339_digit(p[4]))
			return ERR_INVALID;
		oh = (p[0] - '0') * 10 + (p[1] - '0');
		om = (p[3] - '0') * 10 + (p[4] - '0');
		if (oh > 24 || om > 60)
			return ERR_INVALID;
		p += 5;
	}
	if (*p != '\0')
		return ERR_INVALID;
	*ret_sec = rfc3339_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
	    sign * (oh * 3600 + om * 60);
	*ret_nsec = ns;
	return 0;
}

int
rfc3339_parse_ns(const char *s, int64_t *ret_unix_ns)
{
	int64_t sec;
	int32_t ns;
	int r;

	if ((r = rfc3339_parse(s, &sec, &ns)) < 0)
		return r;
	if (sec > (INT64_MAX - ns) / NS_PER_S || sec < INT64_MIN / NS_PER_S + 1)
		return ERR_INVALID;
	*ret_unix_ns = sec * NS_PER_S + ns;
	return 0;
}

/* rfc3339_write formats sec, with six digits of micro when micro >= 0. */
static int
rfc3339_write(int64_t sec, int micro, char *buf, size_t len)
{
	int64_t days = sec / 86400, rem = sec % 86400, y;
	char tmp[RFC3339_MAX];
	int m, d, n;

	if (rem < 0) {
		rem += 86400;
		days--;
	}
	rfc3339_civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999)
		return ERR_INVALID;
	if (micro >= 0)
		n = snprintf(tmp, sizeof(tmp), "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d.%06dZ", y, m, d,
		    (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), micro);
	else
		n = snprintf(tmp, sizeof(tmp), "%04" PRId64 "-%02d-%02dT%02d:%02d:%02dZ", y, m, d,
		    (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
	if (n < 0 || (size_t)n >= len)
		return ERR_INVALID;
	memcpy(buf, tmp, (size_t)n + 1);
	return 0;
}

int
rfc3339_format(int64_t sec, char *buf, size_t len)
{
	return rfc3339_write(sec, -1, buf, len);
}

int
rfc3339_format_micro(int64_t unix_ns, char *buf, size_t len)
{
	int64_t sec = unix_ns / NS_PER_S, ns = unix_ns % NS_PER_S;

	if (ns < 0) {
		ns += NS_PER_S;
		sec--;
	}
	return rfc3339_write(sec, (int)(ns / 1000), buf, len);
}
