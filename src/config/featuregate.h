/* featuregate.h - --feature-gates checked as the upstream
 * cloud-controller-manager of the same release checks it: every name one of
 * the gates its binary registers, a locked gate only at its locked value.
 * No gate changes what bootccm does.
 *
 * Contract: never logs; the message names the flag and the gate. */
#ifndef BOOTCCM_FEATUREGATE_H
#define BOOTCCM_FEATUREGATE_H

#include "base/err.h"

/* featuregate_check checks list, "Name=bool,..." (the syntax already
 * checked): 0, or ERR_INVALID for a gate upstream does not know
 * ("unrecognized feature gate") or one locked to the other value. */
int featuregate_check(const char *list, struct errbuf *e);

#endif
