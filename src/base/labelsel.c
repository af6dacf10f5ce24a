/* labelsel.c - label selector parsing and matching. */
#include "base/labelsel.h"

#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#define LABELSEL_NAME_MAX 63     /* a label name or value */
#define LABELSEL_PREFIX_MAX 253  /* a DNS-subdomain key prefix */

static int
labelsel_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* labelsel_name_ok: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, 1..63 (or
 * 0..63 when empty_ok, for values). */
static int
labelsel_name_ok(const char *s, size_t len, int empty_ok)
{
	if (len == 0)
		return empty_ok;
	if (len > LABELSEL_NAME_MAX || !labelsel_alnum(s[0]) || !labelsel_alnum(s[len - 1]))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!labelsel_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return 0;
	return 1;
}

/* labelsel_subdomain_ok: lowercase DNS-1123 subdomain, at most 253. */
static int
labelsel_subdomain_ok(const char *s, size_t len)
{
	size_t label = 0;

	if (len == 0 || len > LABELSEL_PREFIX_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return 0;
		if (label == 0 && c == '-')
			return 0;
		if (++label > 63)
			return 0;
	}
	return label > 0 && s[len - 1] != '-';
}

int
labelsel_dns_subdomain_ok(const char *s)
{
	return labelsel_subdomain_ok(s, strlen(s));
}

int
labelsel_dns_label_ok(const char *s)
{
	size_t len = strlen(s);

	return len <= LABELSEL_NAME_MAX && strchr(s, '.') == NULL &&
	    labelsel_subdomain_ok(s, len);
}

int
labelsel_key_ok(const char *key)
{
	const char *slash = strchr(key, '/');

	if (slash == NULL)
		return labelsel_name_ok(key, strlen(key), 0);
	return labelsel_subdomain_ok(key, (size_t)(slash - key)) &&
	    labelsel_name_ok(slash + 1, strlen(slash + 1), 0);
}

int
labelsel_value_ok(const char *value)
{
	return labelsel_name_ok(value, strlen(value), 1);
}

void
labelsel_free(struct labelsel *sel)
{
	for (size_t i = 0; i < sel->n; i++) {
		free(sel->reqs[i].key);
		for (size_t j = 0; j < sel->reqs[i].n_values; j++)
			free(sel->reqs[i].values[j]);
		free(sel->reqs[i].values);
	}
	free(sel->reqs);
	sel->reqs = NULL;
	sel->n = 0;
}

/* The parser: a cursor over the text. */
struct labelsel_p {
	const char *s;
	size_t i;
	struct errbuf *e;
};

static void
labelsel_ws(struct labelsel_p *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\t')
		p->i++;
}

static int
labelsel_bad(struct labelsel_p *p, const char *what)
{
	return errbuf_set(p->e, ERR_INVALID, "label selector \"%.128s\": %s at byte %zu",
	    p->s, what, p->i);
}

/* labelsel_word reads a key or value: up to whitespace or a delimiter. */
static char *
labelsel_word(struct labelsel_p *p)
{
	size_t start;

	labelsel_ws(p);
	start = p->i;
	while (p->s[p->i] != '\0' && strchr(" \t,=!()", p->s[p->i]) == NULL)
		p->i++;
	return xstrndup(p->s + start, p->i - start);
}

/* labelsel_set reads "(a, b, c)" into r's values. */
static int
labelsel_set(struct labelsel_p *p, struct labelsel_req *r)
{
	labelsel_ws(p);
	if (p->s[p->i] != '(')
		return labelsel_bad(p, "'(' expected");
	p->i++;
	for (;;) {
		char *v = labelsel_word(p);
		if (!labelsel_value_ok(v)) {
			free(v);
			return labelsel_bad(p, "invalid label value");
		}
		if (r->n_values == LABELSEL_VALUES_MAX) {
			free(v);
			return labelsel_bad(p, "too many values");
		}
		r->values = xreallocarray(r->values, r->n_values + 1, sizeof(*r->values));
		r->values[r->n_values++] = v;
		labelsel_ws(p);
		if (p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->s[p->i] == ')') {
			p->i++;
			return 0;
		}
		return labelsel_bad(p, "',' or ')' expected");
	}
}

static int
labelsel_req(struct labelsel_p *p, struct labelsel_req *r)
{
	int negated = 0;
	char *op;

	labelsel_ws(p);
	if (p->s[p->i] == '!') {
		negated = 1;
		p->i++;
	}
	r->key = labelsel_word(p);
	if (!labelsel_key_ok(r->key))
		return labelsel_bad(p, "invalid label key");
	labelsel_ws(p);
	if (negated) {
		r->op = LABELSEL_NOTEXISTS;
		return 0;
	}
	if (p->s[p->i] == '\0' || p->s[p->i] == ',') {
		r->op = LABELSEL_EXISTS;
		return 0;
	}
	if (p->s[p->i] == '=' || p->s[p->i] == '!') {
		if (p->s[p->i] == '!') {
			if (p->s[p->i + 1] != '=')
				return labelsel_bad(p, "'!=' expected");
			r->op = LABELSEL_NE;
			p->i += 2;
		} else {
			r->op = LABELSEL_EQ;
			p->i += p->s[p->i + 1] == '=' ? 2 : 1;
		}
		r->values = xcalloc(1, sizeof(*r->values));
		r->values[0] = labelsel_word(p);
		r->n_values = 1;
		if (!labelsel_value_ok(r->values[0]))
			return labelsel_bad(p, "invalid label value");
		return 0;
	}
	op = labelsel_word(p);
	if (strcmp(op, "in") == 0)
		r->op = LABELSEL_IN;
	else if (strcmp(op, "notin") == 0)
		r->op = LABELSEL_NOTIN;
	else {
		free(op);
		return labelsel_bad(p, "an operator (=, ==, !=, in, notin) expected");
	}
	free(op);
	return labelsel_set(p, r);
}

int
labelsel_parse(const char *s, struct labelsel *ret, struct errbuf *e)
{
	struct labelsel_p p = { s, 0, e };
	struct labelsel sel = { NULL, 0 };
	int r;

	labelsel_ws(&p);
	if (s[p.i] == '\0') {
		*ret = sel;
		return 0;
	}
	for (;;) {
		if (sel.n == LABELSEL_REQS_MAX) {
			r = labelsel_bad(&p, "too many requirements");
			goto fail;
		}
		sel.reqs = xreallocarray(sel.reqs, sel.n + 1, sizeof(*sel.reqs));
		memset(&sel.reqs[sel.n], 0, sizeof(sel.reqs[0]));
		sel.n++;
		if ((r = labelsel_req(&p, &sel.reqs[sel.n - 1])) < 0)
			goto fail;
		labelsel_ws(&p);
		if (s[p.i] == '\0')
			break;
		if (s[p.i] != ',') {
			r = labelsel_bad(&p, "',' expected");
			goto fail;
		}
		p.i++;
	}
	*ret = sel;
	return 0;
fail:
	labelsel_free(&sel);
	return r;
}

static int
labelsel_in(const struct labelsel_req *r, const char *v)
{
	for (size_t i = 0; i < r->n_values; i++)
		if (strcmp(r->values[i], v) == 0)
			return 1;
	return 0;
}

int
labelsel_matches(const struct labelsel *sel, labelsel_get_fn get, const void *labels)
{
	for (size_t i = 0; i < sel->n; i++) {
		const struct labelsel_req *r = &sel->reqs[i];
		const char *v = get(labels, r->key);
		int ok;
		switch (r->op) {
		case LABELSEL_EQ:
		case LABELSEL_IN:
			ok = v != NULL && labelsel_in(r, v);
			break;
		case LABELSEL_NE:
		case LABELSEL_NOTIN:
			ok = v == NULL || !labelsel_in(r, v);
			break;
		case LABELSEL_EXISTS:
			ok = v != NULL;
			break;
		default:
			ok = v == NULL;
			break;
		}
		if (!ok)
			return 0;
	}
	return 1;
}
