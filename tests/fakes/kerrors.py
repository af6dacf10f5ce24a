"""Kubernetes Status errors, built the way apimachinery's errors package does;
and the JSON encoding the server uses for everything it writes."""

import json

_GO_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
               ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def go_json(obj):
    """Compact JSON, keys sorted, UTF-8, HTML characters escaped the way Go's
    encoding/json does, newline-terminated (json.Encoder.Encode)."""
    s = json.dumps(obj, sort_keys=True, separators=(",", ":"),
                   ensure_ascii=False)
    for a, b in _GO_ESCAPES:
        s = s.replace(a, b)
    return (s + "\n").encode()


class StatusError(Exception):
    """An API error answered as a metav1.Status body with HTTP code .code."""

    def __init__(self, code, reason, message, details=None, headers=None,
                 list_meta=None):
        Exception.__init__(self, message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.list_meta = list_meta or {}

    def status(self):
        s = {"kind": "Status", "apiVersion": "v1", "metadata": dict(self.list_meta),
             "status": "Failure", "message": self.message, "code": self.code}
        if self.reason:
            s["reason"] = self.reason
        if self.details is not None:
            s["details"] = self.details
        return s


def _qualified(group, resource):
    return resource if not group else "%s.%s" % (resource, group)


def _details(name, group, kind, **extra):
    d = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if kind:
        d["kind"] = kind
    d.update(extra)
    return d


def not_found(group, resource, name):
    return StatusError(404, "NotFound", '%s "%s" not found' %
                       (_qualified(group, resource), name),
                       _details(name, group, resource))


def already_exists(group, resource, name):
    return StatusError(409, "AlreadyExists", '%s "%s" already exists' %
                       (_qualified(group, resource), name),
                       _details(name, group, resource))


def conflict(group, resource, name, msg):
    return StatusError(409, "Conflict",
                       'Operation cannot be fulfilled on %s "%s": %s' %
                       (_qualified(group, resource), name, msg),
                       _details(name, group, resource))


MODIFIED = ("the object has been modified; please apply your changes to the "
            "latest version and try again")


def forbidden(group, resource, name, msg):
    if resource and name:
        m = '%s "%s" is forbidden: %s' % (_qualified(group, resource), name, msg)
    elif resource:
        m = '%s is forbidden: %s' % (_qualified(group, resource), msg)
    else:
        m = "forbidden: %s" % msg
    return StatusError(403, "Forbidden", m, _details(name, group, resource))


def unauthorized(msg="Unauthorized"):
    return StatusError(401, "Unauthorized", msg)


def bad_request(msg):
    return StatusError(400, "BadRequest", msg)


def method_not_allowed(method, what):
    return StatusError(405, "MethodNotAllowed",
                       "%s is not supported on resources of kind %s" % (method, what),
                       {})


def unsupported_media(ctype, supported):
    return StatusError(415, "UnsupportedMediaType",
                       '%s is unsupported patch type, supported types: %s' %
                       (ctype, supported) if supported else
                       'the body of the request was in an unknown format - accepted media types include: %s' % ctype,
                       {})


def internal(msg):
    return StatusError(500, "InternalError",
                       "Internal error occurred: %s" % msg,
                       {"causes": [{"message": msg}]})


def expired(msg, list_meta=None):
    return StatusError(410, "Expired", msg, None, list_meta=list_meta)


def too_many_requests(msg, retry_after):
    return StatusError(429, "TooManyRequests", msg,
                       {"retryAfterSeconds": int(retry_after)} if retry_after else {},
                       {"Retry-After": str(int(retry_after))} if retry_after else {})


# field.ErrorType values and their human forms
FIELD_TYPES = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}

_NO_VALUE = ("FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong",
             "InternalError")


def go_value(v):
    """Render a bad value like field.Error.ErrorBody does (%q, %v or %#v)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, GoRepr):
        return v.text
    return repr(v)


class GoRepr(object):
    """A value printed verbatim (Go's %#v of a struct, uint64 0 as 0x0, ...)."""

    def __init__(self, text):
        self.text = text


class FieldError(object):
    def __init__(self, etype, field, value=None, detail=""):
        self.type = etype
        self.field = field
        self.value = value
        self.detail = detail

    def body(self):
        s = FIELD_TYPES[self.type]
        if self.type not in _NO_VALUE:
            s = "%s: %s" % (s, go_value(self.value))
        if self.detail:
            s += ": " + self.detail
        return s

    def __str__(self):
        return "%s: %s" % (self.field, self.body())


def f_invalid(field, value, detail):
    return FieldError("FieldValueInvalid", field, value, detail)


def f_required(field, detail=""):
    return FieldError("FieldValueRequired", field, None, detail)


def f_forbidden(field, detail):
    return FieldError("FieldValueForbidden", field, None, detail)


def f_duplicate(field, value, detail=""):
    return FieldError("FieldValueDuplicate", field, value, detail)


def f_not_supported(field, value, valid):
    d = ""
    if valid:
        d = "supported values: " + ", ".join('"%s"' % v for v in valid)
    return FieldError("FieldValueNotSupported", field, value, d)


def f_too_long(field, value, limit):
    return FieldError("FieldValueTooLong", field, value,
                      "may not be more than %d bytes" % limit)


def invalid(group, kind, name, errs):
    """NewInvalid: 422 Kind[.group] "name" is invalid: <aggregate>."""
    qk = kind if not group else "%s.%s" % (kind, group)
    # ErrorList.ToAggregate drops repeated messages; the causes keep them
    msgs = []
    for e in errs:
        if str(e) not in msgs:
            msgs.append(str(e))
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    causes = [{"reason": e.type, "message": e.body(), "field": e.field}
              for e in errs]
    d = _details(name, group, kind)
    d["causes"] = causes
    return StatusError(422, "Invalid", '%s "%s" is invalid: %s' % (qk, name, agg),
                       d)


def status_for_code(code, message=None, retry_after=None):
    """A Status for an injected fault with the reason the code maps to."""
    reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden",
               404: "NotFound", 405: "MethodNotAllowed", 406: "NotAcceptable",
               409: "Conflict", 410: "Expired", 413: "RequestEntityTooLarge",
               415: "UnsupportedMediaType", 422: "Invalid",
               429: "TooManyRequests", 500: "InternalError",
               503: "ServiceUnavailable", 504: "Timeout"}
    default_msgs = {
        429: "Too many requests, please try again later.",
        500: "Internal error occurred: injected fault",
        503: "The server is currently unable to handle the request",
        504: "The server was unable to return a response in the time allotted, but may still be processing the request",
    }
    reason = reasons.get(code, "")
    msg = message or default_msgs.get(code) or "injected fault (%d)" % code
    details = None
    headers = {}
    if retry_after is not None:
        details = {"retryAfterSeconds": int(retry_after)}
        headers["Retry-After"] = str(int(retry_after))
    elif code == 429:
        details = {}
    return StatusError(code, reason, msg, details, headers)
