"""Known fields and JSON types of the served kinds.

Decoding a body like the real server: unknown fields are dropped (the caller
turns their paths into `Warning: 299` headers, or a 400 with
fieldValidation=Strict); a value of the wrong JSON type is a 400 ("json: cannot
unmarshal ..."); metav1.Time is normalized to RFC 3339 seconds; MicroTime must
carry exactly six fractional digits.
"""

import datetime
import re

import kerrors

S, I32, I64, B, T, MT, Q, IOS, ANY, BYTES, F64 = (
    "string", "int32", "int64", "bool", "time", "microtime", "quantity",
    "intorstring", "any", "bytes", "float64")


def st(name, fields):
    return ("struct", name, fields)


def lst(item):
    return ("list", item)


def mp(val):
    return ("map", val)


OWNER_REF = st("OwnerReference", {
    "apiVersion": S, "kind": S, "name": S, "uid": S, "controller": B,
    "blockOwnerDeletion": B})

MANAGED = st("ManagedFieldsEntry", {
    "manager": S, "operation": S, "apiVersion": S, "time": T,
    "fieldsType": S, "fieldsV1": ANY, "subresource": S})

OBJECT_META = st("ObjectMeta", {
    "name": S, "generateName": S, "namespace": S, "selfLink": S, "uid": S,
    "resourceVersion": S, "generation": I64, "creationTimestamp": T,
    "deletionTimestamp": T, "deletionGracePeriodSeconds": I64,
    "labels": mp(S), "annotations": mp(S), "ownerReferences": lst(OWNER_REF),
    "finalizers": lst(S), "managedFields": lst(MANAGED)})

OBJECT_REF = st("ObjectReference", {
    "kind": S, "namespace": S, "name": S, "uid": S, "apiVersion": S,
    "resourceVersion": S, "fieldPath": S})

TAINT = st("Taint", {"key": S, "value": S, "effect": S, "timeAdded": T})

NODE = st("Node", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META,
    "spec": st("NodeSpec", {
        "podCIDR": S, "podCIDRs": lst(S), "providerID": S,
        "unschedulable": B, "taints": lst(TAINT), "configSource": ANY,
        "externalID": S}),
    "status": st("NodeStatus", {
        "capacity": mp(Q), "allocatable": mp(Q), "phase": S,
        "conditions": lst(st("NodeCondition", {
            "type": S, "status": S, "lastHeartbeatTime": T,
            "lastTransitionTime": T, "reason": S, "message": S})),
        "addresses": lst(st("NodeAddress", {"type": S, "address": S})),
        "daemonEndpoints": st("NodeDaemonEndpoints", {
            "kubeletEndpoint": st("DaemonEndpoint", {"Port": I32})}),
        "nodeInfo": st("NodeSystemInfo", {
            "machineID": S, "systemUUID": S, "bootID": S, "kernelVersion": S,
            "osImage": S, "containerRuntimeVersion": S, "kubeletVersion": S,
            "kubeProxyVersion": S, "operatingSystem": S, "architecture": S}),
        "images": lst(st("ContainerImage", {"names": lst(S), "sizeBytes": I64})),
        "volumesInUse": lst(S), "volumesAttached": lst(ANY), "config": ANY,
        "runtimeHandlers": lst(ANY), "features": ANY})})

CONDITION = st("Condition", {
    "type": S, "status": S, "observedGeneration": I64,
    "lastTransitionTime": T, "reason": S, "message": S})

PORT_STATUS = st("PortStatus", {"port": I32, "protocol": S, "error": S})

SERVICE = st("Service", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META,
    "spec": st("ServiceSpec", {
        "ports": lst(st("ServicePort", {
            "name": S, "protocol": S, "appProtocol": S, "port": I32,
            "targetPort": IOS, "nodePort": I32})),
        "selector": mp(S), "clusterIP": S, "clusterIPs": lst(S), "type": S,
        "externalIPs": lst(S), "sessionAffinity": S, "loadBalancerIP": S,
        "loadBalancerSourceRanges": lst(S), "externalName": S,
        "externalTrafficPolicy": S, "healthCheckNodePort": I32,
        "publishNotReadyAddresses": B, "sessionAffinityConfig": ANY,
        "ipFamilies": lst(S), "ipFamilyPolicy": S,
        "allocateLoadBalancerNodePorts": B, "loadBalancerClass": S,
        "internalTrafficPolicy": S, "trafficDistribution": S}),
    "status": st("ServiceStatus", {
        "loadBalancer": st("LoadBalancerStatus", {
            "ingress": lst(st("LoadBalancerIngress", {
                "ip": S, "hostname": S, "ipMode": S,
                "ports": lst(PORT_STATUS)}))}),
        "conditions": lst(CONDITION)})})

NAMESPACE = st("Namespace", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META,
    "spec": st("NamespaceSpec", {"finalizers": lst(S)}),
    "status": st("NamespaceStatus", {"phase": S, "conditions": lst(ANY)})})

CONFIGMAP = st("ConfigMap", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META, "data": mp(S),
    "binaryData": mp(BYTES), "immutable": B})

SECRET = st("Secret", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META, "data": mp(BYTES),
    "stringData": mp(S), "type": S, "immutable": B})

SERVICEACCOUNT = st("ServiceAccount", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META,
    "secrets": lst(OBJECT_REF), "imagePullSecrets": lst(ANY),
    "automountServiceAccountToken": B})

ENDPOINTS = st("Endpoints", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META, "subsets": lst(ANY)})

EVENT_SERIES_CORE = st("EventSeries", {"count": I32, "lastObservedTime": MT})

EVENT = st("Event", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META,
    "involvedObject": OBJECT_REF, "reason": S, "message": S,
    "source": st("EventSource", {"component": S, "host": S}),
    "firstTimestamp": T, "lastTimestamp": T, "count": I32, "type": S,
    "eventTime": MT, "series": EVENT_SERIES_CORE, "action": S,
    "related": OBJECT_REF, "reportingComponent": S, "reportingInstance": S})

EVENT_V1 = st("Event", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META, "eventTime": MT,
    "series": EVENT_SERIES_CORE, "reportingController": S,
    "reportingInstance": S, "action": S, "reason": S, "regarding": OBJECT_REF,
    "related": OBJECT_REF, "note": S, "type": S,
    "deprecatedSource": st("EventSource", {"component": S, "host": S}),
    "deprecatedFirstTimestamp": T, "deprecatedLastTimestamp": T,
    "deprecatedCount": I32})

LEASE = st("Lease", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META,
    "spec": st("LeaseSpec", {
        "holderIdentity": S, "leaseDurationSeconds": I32, "acquireTime": MT,
        "renewTime": MT, "leaseTransitions": I32, "strategy": S,
        "preferredHolder": S})})

POLICY_RULE = st("PolicyRule", {
    "verbs": lst(S), "apiGroups": lst(S), "resources": lst(S),
    "resourceNames": lst(S), "nonResourceURLs": lst(S)})
SUBJECT = st("Subject", {"kind": S, "apiGroup": S, "name": S, "namespace": S})
ROLE_REF = st("RoleRef", {"apiGroup": S, "kind": S, "name": S})

CLUSTERROLE = st("ClusterRole", {
    "kind": S, "apiVersion": S, "metadata": OBJECT_META,
    "rules": lst(POLICY_RULE), "aggregationRule": ANY})
ROLE = st("Role", {"kind": S, "apiVersion": S, "metadata": OBJECT_META,
                   "rules": lst(POLICY_RULE)})
BINDING = st("RoleBinding", {"kind": S, "apiVersion": S,
                             "metadata": OBJECT_META,
                             "subjects": lst(SUBJECT), "roleRef": ROLE_REF})

SCHEMAS = {
    ("", "Node"): NODE, ("", "Service"): SERVICE, ("", "Namespace"): NAMESPACE,
    ("", "ConfigMap"): CONFIGMAP, ("", "Secret"): SECRET,
    ("", "ServiceAccount"): SERVICEACCOUNT, ("", "Endpoints"): ENDPOINTS,
    ("", "Event"): EVENT, ("events.k8s.io", "Event"): EVENT_V1,
    ("coordination.k8s.io", "Lease"): LEASE,
    ("rbac.authorization.k8s.io", "ClusterRole"): CLUSTERROLE,
    ("rbac.authorization.k8s.io", "Role"): ROLE,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): BINDING,
    ("rbac.authorization.k8s.io", "RoleBinding"): BINDING,
}

_GO_TYPES = {S: "string", I32: "int32", I64: "int64", B: "bool",
             T: "v1.Time", MT: "v1.MicroTime", BYTES: "[]uint8",
             F64: "float64"}

_MICRO_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})(Z|[+-]\d{2}:\d{2})$")
_TIME_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def _json_type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


class DecodeError(Exception):
    pass


def _type_error(v, struct, path, want):
    jt = _json_type(v)
    if jt == "number" and want in (I32, I64) and isinstance(v, float):
        jt = "number %s" % _go_float(v)
    return DecodeError(
        "json: cannot unmarshal %s into Go struct field %s.%s of type %s"
        % (jt, struct, path, _GO_TYPES.get(want, want)))


def _go_float(v):
    s = repr(v)
    return s[:-2] if s.endswith(".0") else s


def _to_utc(m, frac_digits):
    y, mo, d, hh, mi, ss = (int(m.group(i)) for i in range(1, 7))
    tz = m.group(8)
    dt = datetime.datetime(y, mo, d, hh, mi, ss)
    if tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        off = datetime.timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6]))
        dt = dt - sign * off
    return dt


def _parse_time(v):
    m = _TIME_RE.match(v)
    if not m:
        raise DecodeError(
            'parsing time "%s" as "2006-01-02T15:04:05Z07:00": cannot parse "%s" as "2006"'
            % (v, v))
    return _to_utc(m, 0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_micro(v):
    m = _MICRO_RE.match(v)
    if m:
        return _to_utc(m, 6).strftime("%Y-%m-%dT%H:%M:%S.") + m.group(7) + "Z"
    t = _TIME_RE.match(v)
    layout = "2006-01-02T15:04:05.000000Z07:00"
    if t:
        digits = len(t.group(7) or ".") - 1
        if digits < 6:
            bad, want = v[19:], ".000000"
        else:
            bad, want = v[26:], "Z07:00"
    else:
        bad, want = v, "2006"
    raise DecodeError('parsing time "%s" as "%s": cannot parse "%s" as "%s"'
                      % (v, layout, bad, want))


def _walk(v, schema, struct, path, unknown, jpath):
    """Check/normalize v against schema; returns the new value."""
    if v is None:
        return None
    if schema == ANY:
        return v
    if isinstance(schema, tuple):
        kind = schema[0]
        if kind == "struct":
            if not isinstance(v, dict):
                raise _type_error(v, struct, path, schema[1])
            out = {}
            for k, x in v.items():
                sub = schema[2].get(k)
                p = "%s.%s" % (path, k) if path else k
                jp = "%s.%s" % (jpath, k) if jpath else k
                if sub is None:
                    unknown.append(jp)
                    continue
                out[k] = _walk(x, sub, schema[1], p, unknown, jp)
            return out
        if kind == "list":
            if not isinstance(v, list):
                raise DecodeError(
                    "json: cannot unmarshal %s into Go struct field %s.%s of type []%s"
                    % (_json_type(v), struct, path,
                       schema[1][1] if isinstance(schema[1], tuple) else
                       _GO_TYPES.get(schema[1], schema[1])))
            return [_walk(x, schema[1], struct, path, unknown,
                          "%s[%d]" % (jpath, i)) for i, x in enumerate(v)]
        if kind == "map":
            if not isinstance(v, dict):
                raise DecodeError(
                    "json: cannot unmarshal %s into Go struct field %s.%s of type map[string]%s"
                    % (_json_type(v), struct, path,
                       _GO_TYPES.get(schema[1], "string")))
            return {k: _walk(x, schema[1], struct, path, unknown,
                             "%s.%s" % (jpath, k)) for k, x in v.items()}
    if schema in (S, BYTES):
        if not isinstance(v, str):
            raise _type_error(v, struct, path, schema)
        if schema == BYTES:
            import base64
            try:
                base64.b64decode(v, validate=True)
            except Exception:
                alpha = ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                         "0123456789+/")
                bad = next((i for i, ch in enumerate(v) if ch not in alpha),
                           len(v))
                raise DecodeError("illegal base64 data at input byte %d" % bad)
        return v
    if schema in (I32, I64):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                (isinstance(v, float) and not v.is_integer()) or \
                (isinstance(v, float)):
            raise _type_error(v, struct, path, schema)
        lim = 2 ** 31 if schema == I32 else 2 ** 63
        if not -lim <= v < lim:
            raise DecodeError(
                "json: cannot unmarshal number %d into Go struct field %s.%s of type %s"
                % (v, struct, path, schema))
        return v
    if schema == B:
        if not isinstance(v, bool):
            raise _type_error(v, struct, path, schema)
        return v
    if schema == T:
        if not isinstance(v, str):
            raise _type_error(v, struct, path, schema)
        return _parse_time(v)
    if schema == MT:
        if not isinstance(v, str):
            raise _type_error(v, struct, path, schema)
        return _parse_micro(v)
    if schema == Q:
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise DecodeError("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        return v if isinstance(v, str) else str(v)
    if schema == IOS:
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise DecodeError("json: cannot unmarshal %s into Go value of type intstr.IntOrString" % _json_type(v))
        return v
    return v


def decode(group, kind, version, obj):
    """Normalize obj (a dict, modified in place) and return unknown paths.

    Raises kerrors.StatusError 400 on type errors."""
    schema = SCHEMAS.get((group, kind))
    if schema is None:
        return []
    unknown = []
    try:
        out = _walk(obj, schema, kind, "", unknown, "")
    except DecodeError as e:
        raise kerrors.bad_request('%s in version "%s" cannot be handled as a %s: %s'
                                  % (kind, version, kind, e))
    obj.clear()
    obj.update(out)
    return unknown


def prune(kind, obj, group="", version="v1"):
    """Compatibility name for decode()."""
    return decode(group, kind, version, obj)
