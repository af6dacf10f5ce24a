/* doctor.h - `bootccm doctor`: read a cluster and report every known way a
 * CCM-managed cluster gets stuck (doctor.h), each with its evidence and
 * its fix. Read-only: the shipped ClusterRole bootccm-doctor
 * (static-pod/rbac-doctor.yaml) is all it needs. */
#ifndef BOOTCCM_DOCTOR_CMD_H
#define BOOTCCM_DOCTOR_CMD_H

#include "base/stop.h"

/* Exit statuses, by the worst finding. */
#define DOCTOR_EXIT_HEALTHY 0
#define DOCTOR_EXIT_WARNINGS 1
#define DOCTOR_EXIT_DEADLOCK 2
#define DOCTOR_EXIT_CANNOT_READ 3 /* bad flags, kubeconfig, an API error, no answer
                                     within --timeout, output not written */

#define DOCTOR_TIMEOUT_DEFAULT "30s"
#define DOCTOR_TIMEOUT_MAX_S 3600               /* --timeout: an hour */
#define DOCTOR_THRESHOLD_MAX_S (7 * 24 * 3600)  /* --threshold: a week */
#define DOCTOR_PAGE_SIZE "500"       /* items per list request */
#define DOCTOR_PAGES_MAX 10000       /* list requests per resource */
#define DOCTOR_CCM_KUBECONFIG "/etc/kubernetes/cloud-controller-manager.conf"

/* doctor_cmd runs `bootccm doctor` with argv[0] "doctor"; returns the exit
 * status. */
int doctor_cmd(int argc, char **argv, struct stop *stop);

#endif
