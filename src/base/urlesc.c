/* urlesc.c - percent-encoding. */
#include "base/urlesc.h"

#include <string.h>

static int
urlesc_keep(unsigned char ch, int how)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~' ||
	    (how == URLESC_SEGMENT && ch && strchr("$&+:=@", ch));
}

int
urlesc(struct dynbuf *b, const char *s, int how)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s;
	int r = 0;

	while (*p && r == 0) {
		size_t n = 0;
		while (p[n] && urlesc_keep(p[n], how))
			n++;
		if (n > 0) {
			r = dynbuf_add(b, p, n);
			p += n;
		} else if (how == URLESC_QUERY && *p == ' ') {
			r = dynbuf_add(b, "+", 1);
			p++;
		} else {
			char esc[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			r = dynbuf_add(b, esc, 3);
			p++;
		}
	}
	return r;
}

char *
urlesc_dup(const char *s, int how)
{
	struct dynbuf b;

	dynbuf_init(&b, strlen(s) * 3 + 1);
	urlesc(&b, s, how);
	return dynbuf_take(&b, NULL);
}
