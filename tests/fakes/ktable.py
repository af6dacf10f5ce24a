"""Server-side printing (meta.k8s.io/v1 Table) for `kubectl get`, with the
columns of the real printers for the kinds a cloud controller deals with."""

import datetime


def wants_table(accept):
    """True when the Accept header asks for a Table first (as kubectl does)."""
    first = (accept or "").split(",")[0]
    return "as=Table" in first


def human_duration(secs):
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(secs)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return "%ds" % s
    m = s // 60
    if m < 10:
        return "%dm" % m if s % 60 == 0 else "%dm%ds" % (m, s % 60)
    if m < 180:
        return "%dm" % m
    h = s // 3600
    if h < 8:
        return "%dh" % h if m % 60 == 0 else "%dh%dm" % (h, m % 60)
    if h < 48:
        return "%dh" % h
    if h < 24 * 8:
        return "%dd" % (h // 24) if h % 24 == 0 else "%dd%dh" % (h // 24, h % 24)
    if h < 24 * 365 * 2:
        return "%dd" % (h // 24)
    if h < 24 * 365 * 8:
        dy = (h // 24) % 365
        return "%dy" % (h // 24 // 365) if dy == 0 else "%dy%dd" % (h // 24 // 365, dy)
    return "%dy" % (h // 24 // 365)


def _age(ts):
    if not ts:
        return "<unknown>"
    t = datetime.datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc)
    return human_duration((datetime.datetime.now(datetime.timezone.utc) - t)
                          .total_seconds())


def _col(name, typ="string", priority=0, fmt=""):
    return {"name": name, "type": typ, "format": fmt, "description": "",
            "priority": priority}


def _node_row(o):
    st = o.get("status") or {}
    ready = "Unknown"
    for c in st.get("conditions") or []:
        if c.get("type") == "Ready":
            ready = "Ready" if c.get("status") == "True" else "NotReady"
    status = [ready]
    if (o.get("spec") or {}).get("unschedulable"):
        status.append("SchedulingDisabled")
    labels = (o.get("metadata") or {}).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels
                   if k.startswith("node-role.kubernetes.io/") and "/" in k)
    addrs = st.get("addresses") or []

    def addr(t):
        for a in addrs:
            if a.get("type") == t:
                return a.get("address", "")
        return "<none>"
    ni = st.get("nodeInfo") or {}
    return [o["metadata"]["name"], ",".join(status),
            ",".join(roles) or "<none>", _age(o["metadata"].get("creationTimestamp")),
            ni.get("kubeletVersion", ""), addr("InternalIP"), addr("ExternalIP"),
            ni.get("osImage") or "<unknown>", ni.get("kernelVersion") or "<unknown>",
            ni.get("containerRuntimeVersion") or "<unknown>"]


def _svc_row(o):
    spec = o.get("spec") or {}
    ing = ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    ext = [i.get("ip") or i.get("hostname") for i in ing]
    ext += spec.get("externalIPs") or []
    if spec.get("type") == "LoadBalancer" and not ext:
        ext_s = "<pending>"
    elif spec.get("type") == "ExternalName":
        ext_s = spec.get("externalName", "")
    else:
        ext_s = ",".join(ext) or "<none>"
    ports = []
    for p in spec.get("ports") or []:
        s = "%d" % p.get("port", 0)
        if p.get("nodePort"):
            s += ":%d" % p["nodePort"]
        ports.append("%s/%s" % (s, p.get("protocol", "TCP")))
    sel = spec.get("selector") or {}
    return [o["metadata"]["name"], spec.get("type", "ClusterIP"),
            spec.get("clusterIP") or "<none>", ext_s,
            ",".join(ports) or "<none>", _age(o["metadata"].get("creationTimestamp")),
            ",".join("%s=%s" % kv for kv in sorted(sel.items())) or "<none>"]


def _event_row(o):
    io = o.get("involvedObject") or o.get("regarding") or {}
    last = o.get("lastTimestamp") or o.get("deprecatedLastTimestamp") or \
        o.get("eventTime") or o["metadata"].get("creationTimestamp")
    return [_age(last), o.get("type", ""), o.get("reason", ""),
            "%s/%s" % ((io.get("kind") or "").lower(), io.get("name", "")),
            o.get("message", o.get("note", ""))]


def _lease_row(o):
    spec = o.get("spec") or {}
    return [o["metadata"]["name"], spec.get("holderIdentity", ""),
            _age(o["metadata"].get("creationTimestamp"))]


def _ns_row(o):
    return [o["metadata"]["name"], (o.get("status") or {}).get("phase", ""),
            _age(o["metadata"].get("creationTimestamp"))]


def _cm_row(o):
    n = len(o.get("data") or {}) + len(o.get("binaryData") or {})
    return [o["metadata"]["name"], n, _age(o["metadata"].get("creationTimestamp"))]


def _secret_row(o):
    return [o["metadata"]["name"], o.get("type", ""), len(o.get("data") or {}),
            _age(o["metadata"].get("creationTimestamp"))]


def _csr_row(o):
    """The CertificateSigningRequest printer: its condition is the types of
    its conditions (Approved, Denied, Failed) and Issued once signed, or
    Pending."""
    spec, st = o.get("spec") or {}, o.get("status") or {}
    conds = [c.get("type", "") for c in st.get("conditions") or []
             if c.get("type") in ("Approved", "Denied", "Failed")]
    if st.get("certificate"):
        conds.append("Issued")
    secs = spec.get("expirationSeconds")
    return [o["metadata"]["name"], _age(o["metadata"].get("creationTimestamp")),
            spec.get("signerName", ""), spec.get("username", ""),
            human_duration(secs) if secs else "<none>",
            ",".join(conds) if conds else "Pending"]


def _default_row(o):
    return [o["metadata"]["name"], _age(o["metadata"].get("creationTimestamp"))]


PRINTERS = {
    ("", "Node"): ([_col("Name", fmt="name"), _col("Status"), _col("Roles"),
                    _col("Age"), _col("Version"), _col("Internal-IP", priority=1),
                    _col("External-IP", priority=1), _col("OS-Image", priority=1),
                    _col("Kernel-Version", priority=1),
                    _col("Container-Runtime", priority=1)], _node_row),
    ("", "Service"): ([_col("Name", fmt="name"), _col("Type"), _col("Cluster-IP"),
                       _col("External-IP"), _col("Port(s)"), _col("Age"),
                       _col("Selector", priority=1)], _svc_row),
    ("", "Event"): ([_col("Last Seen"), _col("Type"), _col("Reason"),
                     _col("Object"), _col("Message")], _event_row),
    ("events.k8s.io", "Event"): ([_col("Last Seen"), _col("Type"), _col("Reason"),
                                  _col("Object"), _col("Message")], _event_row),
    ("coordination.k8s.io", "Lease"): ([_col("Name", fmt="name"), _col("Holder"),
                                        _col("Age")], _lease_row),
    ("certificates.k8s.io", "CertificateSigningRequest"): (
        [_col("Name", fmt="name"), _col("Age"), _col("SignerName"), _col("Requestor"),
         _col("RequestedDuration"), _col("Condition")], _csr_row),
    ("", "Namespace"): ([_col("Name", fmt="name"), _col("Status"), _col("Age")],
                        _ns_row),
    ("", "ConfigMap"): ([_col("Name", fmt="name"), _col("Data", "integer"),
                         _col("Age")], _cm_row),
    ("", "Secret"): ([_col("Name", fmt="name"), _col("Type"),
                      _col("Data", "integer"), _col("Age")], _secret_row),
}


def table(res, objs, list_meta):
    """A Table of objs (full objects) for res."""
    cols, row = PRINTERS.get((res.group, res.kind),
                             ([_col("Name", fmt="name"), _col("Age")], _default_row))
    rows = []
    for o in objs:
        md = o.get("metadata") or {}
        rows.append({"cells": row(o), "object": {
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": md}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": list_meta, "columnDefinitions": cols, "rows": rows}
