/* numparse.c - strict integer parsing. */
#include "base/numparse.h"

#include <stddef.h>

#include "base/err.h"

static int
numparse_fail(const char **why, const char *reason)
{
	if (why != NULL)
		*why = reason;
	return ERR_INVALID;
}

static int
numparse_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

int
numparse(const char *s, int flags, int64_t min, int64_t max, int64_t *ret, const char **why)
{
	uint64_t v = 0, lim;
	unsigned base = 10;
	int neg = 0, d;

	if (s == NULL || *s == '\0')
		return numparse_fail(why, "empty");
	if ((flags & NUMPARSE_SIGN) && (*s == '+' || *s == '-'))
		neg = *s++ == '-';
	if ((flags & NUMPARSE_PREFIX) && s[0] == '0' && s[1] != '\0') {
		base = 8;
		if (s[1] == 'x' || s[1] == 'X')
			base = 16;
		else if (s[1] == 'b' || s[1] == 'B')
			base = 2;
		if (base != 8 || s[1] == 'o' || s[1] == 'O')
			s += 2;
	}
	if (*s == '\0')
		return numparse_fail(why, "not a number");
	/* the magnitude's limit: INT64_MAX, or one more for a negative */
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; *s; s++) {
		if ((d = numparse_digit(*s)) >= (int)base)
			return numparse_fail(why, "not a number");
		if (v > (lim - (uint64_t)d) / base) {
			/* still a number: read on to tell "1e" from "1000...0" */
			while (*++s)
				if (numparse_digit(*s) >= (int)base)
					return numparse_fail(why, "not a number");
			return numparse_fail(why, "out of range");
		}
		v = v * base + (uint64_t)d;
	}
	int64_t x = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	if (x < min || x > max)
		return numparse_fail(why, "out of range");
	*ret = x;
	return 0;
}
