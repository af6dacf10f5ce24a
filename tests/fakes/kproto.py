"""Decoding of the few protobuf request bodies typed kubectl commands send
(`kubectl create configmap|secret|namespace`, `kubectl auth can-i`,
`kubectl auth whoami`, `kubectl certificate approve|deny`): the runtime.Unknown envelope ("k8s\\0" + message)
and the generated.proto field numbers of those kinds.  Answers stay JSON
(kubectl accepts both)."""

import base64
import datetime

MAGIC = b"k8s\x00"


class ProtoError(Exception):
    pass


def _varint(b, i):
    shift = 0
    v = 0
    while True:
        if i >= len(b):
            raise ProtoError("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise ProtoError("varint too long")


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ProtoError("truncated field")
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ProtoError("unsupported wire type %d" % wt)
        yield num, wt, v


S, BYTES, I64, BOOL, TIME = "string", "bytes", "int64", "bool", "time"


def msg(fields):
    return ("msg", fields)


def rep(t):
    return ("rep", t)


def mapof(t):
    return ("map", t)


OWNER_REF = msg({1: ("kind", S), 3: ("name", S), 4: ("uid", S),
                 5: ("apiVersion", S), 6: ("controller", BOOL),
                 7: ("blockOwnerDeletion", BOOL)})

OBJECT_META = msg({
    1: ("name", S), 2: ("generateName", S), 3: ("namespace", S),
    4: ("selfLink", S), 5: ("uid", S), 6: ("resourceVersion", S),
    7: ("generation", I64), 8: ("creationTimestamp", TIME),
    9: ("deletionTimestamp", TIME), 10: ("deletionGracePeriodSeconds", I64),
    11: ("labels", mapof(S)), 12: ("annotations", mapof(S)),
    13: ("ownerReferences", rep(OWNER_REF)), 14: ("finalizers", rep(S))})

KINDS = {
    ("v1", "ConfigMap"): msg({1: ("metadata", OBJECT_META),
                              2: ("data", mapof(S)),
                              3: ("binaryData", mapof(BYTES)),
                              4: ("immutable", BOOL)}),
    ("v1", "Secret"): msg({1: ("metadata", OBJECT_META),
                           2: ("data", mapof(BYTES)), 3: ("type", S),
                           4: ("stringData", mapof(S)),
                           5: ("immutable", BOOL)}),
    ("v1", "Namespace"): msg({1: ("metadata", OBJECT_META),
                              2: ("spec", msg({1: ("finalizers", rep(S))})),
                              3: ("status", msg({1: ("phase", S)}))}),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): msg({
        1: ("metadata", OBJECT_META),
        2: ("spec", msg({
            1: ("resourceAttributes", msg({
                1: ("namespace", S), 2: ("verb", S), 3: ("group", S),
                4: ("version", S), 5: ("resource", S), 6: ("subresource", S),
                7: ("name", S)})),
            2: ("nonResourceAttributes", msg({1: ("path", S),
                                              2: ("verb", S)}))}))}),
    ("authentication.k8s.io/v1", "SelfSubjectReview"): msg({
        1: ("metadata", OBJECT_META)}),
    # `kubectl certificate approve|deny` PUT the whole object to /approval
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): msg({
        1: ("metadata", OBJECT_META),
        2: ("spec", msg({1: ("request", BYTES), 2: ("username", S),
                         3: ("uid", S), 4: ("groups", rep(S)),
                         5: ("usages", rep(S)), 7: ("signerName", S),
                         8: ("expirationSeconds", I64)})),
        3: ("status", msg({
            1: ("conditions", rep(msg({
                1: ("type", S), 2: ("reason", S), 3: ("message", S),
                4: ("lastUpdateTime", TIME), 5: ("lastTransitionTime", TIME),
                6: ("status", S)}))),
            2: ("certificate", BYTES)}))}),
}


def _value(t, wt, v):
    if t == S:
        return v.decode("utf-8")
    if t == BYTES:
        return base64.b64encode(v).decode()
    if t == I64:
        return v - (1 << 64) if v >= 1 << 63 else v
    if t == BOOL:
        return bool(v)
    if t == TIME:
        secs = 0
        for n, _, x in _fields(v):
            if n == 1:
                secs = x
        return datetime.datetime.fromtimestamp(
            secs, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if t[0] == "msg":
        return _message(v, t[1])
    raise ProtoError("unsupported type")


def _message(b, spec):
    out = {}
    for num, wt, v in _fields(b):
        f = spec.get(num)
        if f is None:
            continue
        name, t = f
        if isinstance(t, tuple) and t[0] == "rep":
            out.setdefault(name, []).append(_value(t[1], wt, v))
        elif isinstance(t, tuple) and t[0] == "map":
            k, val = "", None
            for n, w, x in _fields(v):
                if n == 1:
                    k = x.decode("utf-8")
                elif n == 2:
                    val = _value(t[1], w, x)
            out.setdefault(name, {})[k] = val if val is not None else ""
        else:
            out[name] = _value(t, wt, v)
    # gogo writes every non-pointer field: drop the zero values JSON omits
    return {k: v for k, v in out.items() if v not in ("", 0, False, {}, [])
            or k in ("data",)}


def decode(body):
    """A protobuf request body -> (apiVersion, kind, object dict).

    Raises ProtoError for anything but the kinds in KINDS."""
    if not body.startswith(MAGIC):
        raise ProtoError("missing protobuf envelope")
    api_version = kind = ""
    raw = b""
    for num, _, v in _fields(body[len(MAGIC):]):
        if num == 1:
            for n, _, x in _fields(v):
                if n == 1:
                    api_version = x.decode()
                elif n == 2:
                    kind = x.decode()
        elif num == 2:
            raw = v
    spec = KINDS.get((api_version, kind))
    if spec is None:
        raise ProtoError("protobuf %s %s is not supported" % (api_version, kind))
    obj = _message(raw, spec[1])
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return api_version, kind, obj
