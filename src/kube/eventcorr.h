/* eventcorr.h - what the Event recorder reads of the correlator beside the
 * API kube/events.h declares for it (events_correlator_*, events_correlate):
 * the source it stands for, and the time rounding both share.
 *
 * Contract: as kube/events.h's correlator: the owner serializes; never
 * logs. */
#ifndef BOOTCCM_KUBE_EVENTCORR_H
#define BOOTCCM_KUBE_EVENTCORR_H

#include <stdint.h>

#include "kube/events.h"

/* events_correlator_component and events_correlator_host return the source
 * c was made for. */
const char *events_correlator_component(const struct events_correlator *c);
const char *events_correlator_host(const struct events_correlator *c);

/* events_floor_s returns the Unix second ns falls in (rounded down, also
 * before 1970). */
int64_t events_floor_s(int64_t ns);

#endif
