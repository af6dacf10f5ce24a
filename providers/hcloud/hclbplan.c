/* hclbplan.c - the plan for a balancer: from what it is to what a Service
 * wants (hclbplan.h). */
#include "hclbplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

static int
hclbplan_streq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* hclbplan_service_differs tells whether cur is not what p asks. */
static int
hclbplan_service_differs(const struct hclbspec *spec, const struct hclbspec_port *p,
    const struct hcapi_lb_service *cur)
{
	struct hcapi_lb_hc w;

	if (cur->destination_port != p->dest || strcmp(cur->protocol, spec->protocol) != 0 ||
	    cur->proxyprotocol != spec->proxyprotocol)
		return 1;
	hclbspec_hc_want(spec, p, &w);
	if (strcmp(cur->hc.protocol, w.protocol) != 0 || cur->hc.port != w.port ||
	    cur->hc.interval != w.interval || cur->hc.timeout != w.timeout ||
	    cur->hc.retries != w.retries)
		return 1;
	if (hclbspec_is_http(w.protocol) &&
	    ((spec->hc.domain && !hclbplan_streq(spec->hc.domain, cur->hc.domain)) ||
	    (spec->hc.path && !hclbplan_streq(spec->hc.path, cur->hc.path)) ||
	    (spec->hc.status_codes && !hclbplan_streq(spec->hc.status_codes,
	    cur->hc.status_codes)) ||
	    (spec->hc.tls >= 0 && spec->hc.tls != cur->hc.tls)))
		return 1;
	if (hclbspec_is_http(spec->protocol) && spec->http_set &&
	    ((spec->cookie_name && !hclbplan_streq(spec->cookie_name, cur->cookie_name)) ||
	    (spec->cookie_lifetime >= 0 && spec->cookie_lifetime != cur->cookie_lifetime) ||
	    (spec->certificates && !hclbplan_streq(spec->certificates, cur->certificates)) ||
	    (spec->redirect_http >= 0 && spec->redirect_http != cur->redirect_http) ||
	    (spec->sticky_sessions >= 0 && spec->sticky_sessions != cur->sticky_sessions)))
		return 1;
	return 0;
}

static void
hclbplan_push(int64_t **v, size_t *n, int64_t x)
{
	*v = xreallocarray(*v, *n + 1, sizeof(**v));
	(*v)[(*n)++] = x;
}

static int
hclbplan_attached(const struct hclbspec *spec, const struct hcapi_lb *lb)
{
	for (size_t i = 0; i < lb->n_private; i++)
		if (lb->private_net[i].network == spec->network &&
		    (spec->private_ipv4[0] == '\0' ||
		    strcmp(spec->private_ipv4, lb->private_net[i].ip) == 0))
			return 1;
	return 0;
}

/* hclbplan_services plans the listen ports. */
static void
hclbplan_services(const struct hclbspec *spec, const struct hcapi_lb *lb,
    const struct hclbspec_owned *owned, struct hclbplan *p)
{
	for (size_t i = 0; i < spec->n_ports; i++) {
		const struct hclbspec_port *sp = &spec->ports[i];
		const struct hcapi_lb_service *cur = NULL;
		for (size_t j = 0; j < lb->n_services; j++)
			if (lb->services[j].listen_port == sp->listen)
				cur = &lb->services[j];
		if (cur == NULL) {
			hclbplan_push(&p->add, &p->n_add, sp->listen);
			hclbspec_set_add(&p->before.ports, &p->before.n_ports, sp->listen);
			hclbspec_set_add(&p->after.ports, &p->after.n_ports, sp->listen);
		} else if (!hclbspec_set_has(owned->ports, owned->n_ports, sp->listen)) {
			/* someone else's service holds the port: never touched */
			if (p->foreign_port == 0)
				p->foreign_port = (int)sp->listen;
		} else if (hclbplan_service_differs(spec, sp, cur)) {
			hclbplan_push(&p->update, &p->n_update, sp->listen);
		}
	}
	for (size_t i = 0; i < owned->n_ports; i++) {
		int64_t port = owned->ports[i];
		int wanted = 0, present = 0;
		for (size_t j = 0; j < spec->n_ports; j++)
			wanted |= spec->ports[j].listen == port;
		for (size_t j = 0; j < lb->n_services; j++)
			present |= lb->services[j].listen_port == port;
		if (wanted)
			continue;
		if (present)
			hclbplan_push(&p->del, &p->n_delete, port);
		else   /* recorded, gone: nothing to do but forget it */
			hclbspec_set_del(p->before.ports, &p->before.n_ports, port);
		hclbspec_set_del(p->after.ports, &p->after.n_ports, port);
	}
}

/* hclbplan_targets plans the targets: server ids for want, or the
 * selector target. */
static void
hclbplan_targets(const struct hclbspec *spec, const struct hcapi_lb *lb,
    const struct hclbspec_owned *owned, int64_t *want, size_t n_want, struct hclbplan *p)
{
	int selector_ok = 0;
	size_t kept;
	int64_t *present = NULL;
	size_t n_present = 0;

	if (spec->node_selector != NULL)
		n_want = 0;   /* the selector target picks the servers */
	n_want = n_want ? hclbspec_set_norm(want, n_want) : 0;
	kept = lb->n_targets;
	for (size_t i = 0; i < lb->n_targets; i++) {
		const struct hcapi_lb_target *t = &lb->targets[i];
		if (strcmp(t->type, "label_selector") == 0) {
			if (strncmp(t->selector, HCLBSPEC_SELECTOR_PREFIX,
			    strlen(HCLBSPEC_SELECTOR_PREFIX)) != 0)
				continue;   /* not one of ours */
			if (spec->node_selector != NULL && strcmp(t->selector, spec->selector_key) == 0 &&
			    t->use_private_ip == spec->use_private_ip && !selector_ok) {
				selector_ok = 1;
				continue;
			}
			p->sremove = xreallocarray(p->sremove, p->n_sremove + 1, sizeof(*p->sremove));
			snprintf(p->sremove[p->n_sremove++], HCAPI_SELECTOR_MAX, "%s", t->selector);
			kept--;
			continue;
		}
		if (strcmp(t->type, "server") != 0)
			continue;
		if (!hclbspec_set_has(owned->targets, owned->n_targets, t->server_id)) {
			/* someone else's target: kept, and it serves as well */
			hclbplan_push(&present, &n_present, t->server_id);
			continue;
		}
		if (hclbspec_set_has(want, n_want, t->server_id) &&
		    t->use_private_ip == spec->use_private_ip) {
			hclbplan_push(&present, &n_present, t->server_id);
			continue;
		}
		/* ours and unwanted, or to be made again with the other address */
		hclbplan_push(&p->tremove, &p->n_tremove, t->server_id);
		hclbspec_set_del(p->after.targets, &p->after.n_targets, t->server_id);
		kept--;
	}
	n_present = n_present ? hclbspec_set_norm(present, n_present) : 0;
	/* recorded but gone (removed by hand, a crash before the add): forget */
	for (size_t i = 0; i < owned->n_targets; i++) {
		int64_t id = owned->targets[i];
		int there = 0;
		for (size_t j = 0; j < lb->n_targets; j++)
			there |= strcmp(lb->targets[j].type, "server") == 0 &&
			    lb->targets[j].server_id == id;
		if (!there) {
			hclbspec_set_del(p->before.targets, &p->before.n_targets, id);
			hclbspec_set_del(p->after.targets, &p->after.n_targets, id);
		}
	}
	if (spec->node_selector != NULL && !selector_ok) {
		if (p->max_targets > 0 && (int64_t)kept >= p->max_targets)
			p->shortfall++;
		else
			p->selector_add = 1, kept++;
	}
	for (size_t i = 0; i < n_want; i++) {
		if (hclbspec_set_has(present, n_present, want[i]))
			continue;
		if (p->max_targets > 0 && (int64_t)kept >= p->max_targets) {
			p->shortfall++;
			continue;
		}
		hclbplan_push(&p->tadd, &p->n_tadd, want[i]);
		hclbspec_set_add(&p->before.targets, &p->before.n_targets, want[i]);
		hclbspec_set_add(&p->after.targets, &p->after.n_targets, want[i]);
		kept++;
	}
	free(present);
}

void
hclbplan_make(const struct hclbspec *spec, const struct hcapi_lb *lb, const int64_t *want,
    size_t n_want, struct hclbplan *ret)
{
	struct hclbspec_owned owned;
	int64_t *w = n_want ? xmemdup(want, n_want * sizeof(*want)) : NULL;

	memset(ret, 0, sizeof(*ret));
	hclbspec_owned_read(lb, &owned);
	hclbspec_owned_copy(&ret->before, &owned);
	hclbspec_owned_copy(&ret->after, &owned);
	ret->max_targets = lb->max_targets;
	ret->rename = spec->name_set && strcmp(lb->name, spec->name) != 0;
	ret->change_type = spec->type_set && strcmp(lb->type, spec->type) != 0;
	ret->change_algorithm = spec->algorithm_set && strcmp(lb->algorithm, spec->algorithm) != 0;
	if (spec->disable_public == 1 && lb->public_enabled)
		ret->public_iface = -1;
	else if (spec->disable_public == 0 && !lb->public_enabled)
		ret->public_iface = 1;
	ret->attach = spec->network > 0 && !hclbplan_attached(spec, lb);
	hclbplan_services(spec, lb, &owned, ret);
	hclbplan_targets(spec, lb, &owned, w, n_want, ret);
	ret->record_before = !hclbspec_owned_eq(&ret->before, &owned);
	ret->record_after = !hclbspec_owned_eq(&ret->after, &ret->before);
	hclbspec_owned_free(&owned);
	free(w);
}

void
hclbplan_free(struct hclbplan *p)
{
	free(p->add);
	free(p->update);
	free(p->del);
	free(p->tadd);
	free(p->tremove);
	free(p->sremove);
	hclbspec_owned_free(&p->before);
	hclbspec_owned_free(&p->after);
	memset(p, 0, sizeof(*p));
}

int
hclbplan_empty(const struct hclbplan *p)
{
	return !p->rename && !p->change_type && !p->change_algorithm && !p->public_iface &&
	    !p->attach && !p->n_add && !p->n_update && !p->n_delete && !p->n_tadd &&
	    !p->n_tremove && !p->selector_add && !p->n_sremove && !p->record_before &&
	    !p->record_after;
}
