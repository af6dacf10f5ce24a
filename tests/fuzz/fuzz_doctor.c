/* fuzz_doctor.c - libFuzzer harness: the doctor's analysis and rendering
 * of arbitrary API answers. The input is one JSON object whose members
 * stand for the lists the command reads ({"nodes": [...], "pendingPods":
 * [...], "systemPods", "services", "events", "csrs", "lease": {...},
 * "now": N, "threshold": N, "ccmServer": "..."}); the analysis either
 * fails with a message or gives a report that renders in both forms. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "base/jsonx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_object *
fuzz_member(json_object *root, const char *name, enum json_type t)
{
	json_object *v;

	if (!json_object_object_get_ex(root, name, &v) || !json_object_is_type(v, t))
		return NULL;
	return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct doctor_input in;
	struct doctor_report rep;
	struct errbuf e = { "" };
	struct dynbuf out;
	json_object *root, *v;

	if (jsonx_parse((const char *)data, size, 32, &root, &e) < 0)
		return 0;
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return 0;
	}
	memset(&in, 0, sizeof(in));
	memset(&rep, 0, sizeof(rep));
	in.nodes = fuzz_member(root, "nodes", json_type_array);
	in.pending_pods = fuzz_member(root, "pendingPods", json_type_array);
	in.system_pods = fuzz_member(root, "systemPods", json_type_array);
	in.services = fuzz_member(root, "services", json_type_array);
	in.init_events = fuzz_member(root, "events", json_type_array);
	in.csrs = fuzz_member(root, "csrs", json_type_array);
	in.lease = fuzz_member(root, "lease", json_type_object);
	if ((v = fuzz_member(root, "now", json_type_int)) != NULL)
		in.now = json_object_get_int64(v);
	if ((v = fuzz_member(root, "threshold", json_type_int)) != NULL)
		in.threshold = json_object_get_int64(v);
	if ((v = fuzz_member(root, "ccmServer", json_type_string)) != NULL) {
		in.ccm_server = json_object_get_string(v);
		in.ccm_kubeconfig = "fuzz.conf";
	}
	if (doctor_analyze(&in, &rep, &e) < 0) {
		if (e.msg[0] == '\0' || rep.n != 0)
			abort();  /* a failure says why, and reports nothing */
	} else {
		for (int json = 0; json < 2; json++) {
			dynbuf_init(&out, DOCTOR_OUTPUT_MAX);
			if (doctor_render(&rep, json, &out) < 0 || dynbuf_len(&out) == 0)
				abort();
			dynbuf_free(&out);
		}
	}
	doctor_report_free(&rep);
	json_object_put(root);
	return 0;
}
