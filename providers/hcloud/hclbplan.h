/* hclbplan.h - the plan for a Service's balancer: from what the API says it
 * is (bootccm's record on it included) to what the Service's spec wants,
 * as the changes hclb.c then makes in order. Pure: no I/O, never logs. */
#ifndef BOOTCCM_HCLOUD_HCLBPLAN_H
#define BOOTCCM_HCLOUD_HCLBPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "hcapi.h"
#include "hclbspec.h"

/* What hclbplan_make decides. */
struct hclbplan {
	int rename, change_type, change_algorithm;
	int public_iface;              /* 1 enable, -1 disable, 0 leave */
	int attach;                    /* attach to the configured network */
	size_t n_add, n_update, n_delete;   /* listen ports */
	int64_t *add, *update, *del;
	size_t n_tadd, n_tremove;      /* server ids */
	int64_t *tadd, *tremove;
	int selector_add;              /* add the selector target */
	size_t n_sremove;              /* selector targets of ours no longer wanted */
	char (*sremove)[HCAPI_SELECTOR_MAX];
	struct hclbspec_owned before;  /* the record while the adds run */
	struct hclbspec_owned after;   /* the record once the removes are done */
	int record_before, record_after; /* the record changes then */
	size_t shortfall;              /* wanted servers left out: the type's max_targets */
	int64_t max_targets;
	int foreign_port;              /* a listen port the Service wants is someone
	                                  else's (0: none) */
};

/* hclbplan_make compares lb (bootccm's) with spec and the servers wanted
 * as targets (ids, any order; ignored with a node selector) into *ret
 * (free with hclbplan_free): LB changes first, then services, then
 * targets, removes before adds, adds in id order up to the type's
 * max_targets counting every target the balancer keeps. Only recorded
 * services and targets are updated or removed. */
void hclbplan_make(const struct hclbspec *spec, const struct hcapi_lb *lb,
    const int64_t *want, size_t n_want, struct hclbplan *ret);
void hclbplan_free(struct hclbplan *p);

/* hclbplan_empty tells whether the plan changes nothing. */
int hclbplan_empty(const struct hclbplan *p);

#endif
