"""Defaulting and validation of the served kinds, after the real registry
strategies (pkg/apis/core/validation, apimachinery validation): same checks,
same field paths, same messages, for what a cloud controller runs into."""

import base64
import ipaddress
import re

import kerrors
from kerrors import (f_duplicate, f_forbidden, f_invalid, f_not_supported,
                     f_required, f_too_long, GoRepr)

# ------------------------------------------------------------ name checks

QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and "
             "must start and end with an alphanumeric character")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of "
                   "alphanumeric characters, '-', '_' or '.', and must start "
                   "and end with an alphanumeric character")
DNS1123_SUB_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
DNS1123_SUB_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case "
                   "alphanumeric characters, '-' or '.', and must start and end "
                   "with an alphanumeric character")
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case "
                     "alphanumeric characters or '-', and must start and end "
                     "with an alphanumeric character")
DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric "
               "characters or '-', start with an alphabetic character, and end "
               "with an alphanumeric character")
ANNOTATIONS_MAX = 256 * 1024  # bytes, TotalAnnotationSizeLimitB


def regex_error(msg, fmt, *examples):
    if not examples:
        return msg + " (regex used for validation is '" + fmt + "')"
    msg += " (e.g. "
    for i, e in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += "'" + e + "', "
    return msg + "regex used for validation is '" + fmt + "')"


def max_len(n):
    return "must be no more than %d characters" % n


def _full(fmt, v):
    return re.fullmatch(fmt, v) is not None


def is_dns1123_subdomain(v):
    errs = []
    if len(v) > 253:
        errs.append(max_len(253))
    if not _full(DNS1123_SUB_FMT, v):
        errs.append(regex_error(DNS1123_SUB_MSG, DNS1123_SUB_FMT, "example.com"))
    return errs


def is_dns1123_label(v):
    errs = []
    if len(v) > 63:
        errs.append(max_len(63))
    if not _full(DNS1123_LABEL_FMT, v):
        if _full(DNS1123_SUB_FMT, v):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT,
                                    "my-name", "123-abc"))
    return errs


def is_dns1035_label(v):
    errs = []
    if len(v) > 63:
        errs.append(max_len(63))
    if not _full(DNS1035_FMT, v):
        errs.append(regex_error(DNS1035_MSG, DNS1035_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(v):
    errs = []
    parts = v.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return ["a qualified name " + regex_error(QNAME_MSG, QNAME_FMT, "MyName",
                                                  "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + max_len(63))
    if not _full(QNAME_FMT, name):
        errs.append("name part " + regex_error(QNAME_MSG, QNAME_FMT, "MyName",
                                               "my.name", "123-abc"))
    return errs


def is_valid_label_value(v):
    errs = []
    if len(v) > 63:
        errs.append(max_len(63))
    if not _full("(" + QNAME_FMT + ")?", v):
        errs.append(regex_error(LABEL_VALUE_MSG, "(" + QNAME_FMT + ")?",
                                "MyValue", "my_value", "12345"))
    return errs


def is_ip(v):
    try:
        ipaddress.ip_address(v)
        return True
    except ValueError:
        return False


def is_cidr(v):
    try:
        ipaddress.ip_network(v, strict=False)
        return "/" in v
    except ValueError:
        return False


# ------------------------------------------------------------ object meta

def is_path_segment_name(v):
    """RBAC object names (ValidateRBACName = path.IsValidPathSegmentName):
    anything but "." and "..", without "/" or "%" ("system:..." is fine)."""
    if v in (".", ".."):
        return ['may not be \'%s\'' % v]
    for bad in ("/", "%"):
        if bad in v:
            return ['may not contain \'%s\'' % bad]
    return []


NAME_CHECKS = {
    "Service": is_dns1035_label,
    "Namespace": is_dns1123_label,
    "Role": is_path_segment_name,
    "ClusterRole": is_path_segment_name,
    "RoleBinding": is_path_segment_name,
    "ClusterRoleBinding": is_path_segment_name,
}


def validate_labels(labels, path):
    errs = []
    for k in sorted(labels or {}):
        for m in is_qualified_name(k):
            errs.append(f_invalid(path, k, m))
        for m in is_valid_label_value(labels[k]):
            errs.append(f_invalid(path, labels[k], m))
    return errs


def validate_annotations(ann, path):
    errs = []
    total = 0
    for k in sorted(ann or {}):
        for m in is_qualified_name(k.lower()):
            errs.append(f_invalid(path, k, m))
        total += len(k) + len(ann[k])
    if total > ANNOTATIONS_MAX:
        errs.append(f_too_long(path, "", ANNOTATIONS_MAX))
    return errs


def validate_meta(kind, md, namespaced):
    errs = []
    name = md.get("name", "")
    check = NAME_CHECKS.get(kind, is_dns1123_subdomain)
    if not name:
        errs.append(f_required("metadata.name", "name or generateName is required"))
    else:
        for m in check(name):
            errs.append(f_invalid("metadata.name", name, m))
    errs += validate_labels(md.get("labels"), "metadata.labels")
    errs += validate_annotations(md.get("annotations"), "metadata.annotations")
    fins = md.get("finalizers") or []
    seen = set()
    for i, f in enumerate(fins):
        for m in is_qualified_name(f):
            errs.append(f_invalid("metadata.finalizers", f, m))
        if f in seen:
            errs.append(f_duplicate("metadata.finalizers[%d]" % i, f))
        seen.add(f)
    return errs


def validate_meta_update(md, old):
    errs = []
    if old.get("deletionTimestamp"):
        # finalizers may only be removed from an object being deleted
        new_f = set(md.get("finalizers") or [])
        for f in new_f - set(old.get("finalizers") or []):
            errs.append(f_forbidden("metadata.finalizers",
                                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{\"%s\"}" % f))
    return errs


# ---------------------------------------------------------------- kinds

TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _go_taint(t):
    ta = t.get("timeAdded")
    return GoRepr('core.Taint{Key:"%s", Value:"%s", Effect:"%s", TimeAdded:%s}'
                  % (t.get("key", ""), t.get("value", ""), t.get("effect", ""),
                     "<nil>" if ta is None else "time.Date(...)"))


def validate_taints(taints, path):
    errs = []
    seen = {}
    for i, t in enumerate(taints):
        p = "%s[%d]" % (path, i)
        key = t.get("key", "")
        for m in is_qualified_name(key):
            errs.append(f_invalid(p + ".key", key, m))
        val = t.get("value", "")
        vm = is_valid_label_value(val)
        if vm:
            errs.append(f_invalid(p + ".value", val, ";".join(vm)))
        eff = t.get("effect", "")
        if not eff:
            errs.append(f_required(p + ".effect", ""))
        elif eff not in TAINT_EFFECTS:
            errs.append(f_not_supported(p + ".effect", eff, TAINT_EFFECTS))
        if key in seen.get(eff, set()):
            e = f_duplicate(p, _go_taint(t), "taints must be unique by key and effect pair")
            errs.append(e)
            continue
        seen.setdefault(eff, set()).add(key)
    return errs


def validate_node(node, old):
    errs = validate_meta("Node", node.get("metadata", {}), False)
    spec = node.get("spec") or {}
    if spec.get("taints"):
        errs += validate_taints(spec["taints"], "metadata.taints")
    cidrs = spec.get("podCIDRs") or []
    for i, c in enumerate(cidrs):
        if not is_cidr(c):
            errs.append(f_invalid("spec.podCIDRs[%d]" % i,
                                  GoRepr("[]string{%s}" % ", ".join('"%s"' % x for x in cidrs)),
                                  "must be a valid CIDR"))
    if len(cidrs) > 2:
        errs.append(f_invalid("spec.podCIDRs",
                              GoRepr("[]string{%s}" % ", ".join('"%s"' % x for x in cidrs)),
                              "may specify no more than one CIDR for each IP family"))
    if old is None:
        return errs
    errs += validate_meta_update(node.get("metadata", {}), old.get("metadata", {}))
    seen = set()
    for i, a in enumerate((node.get("status") or {}).get("addresses") or []):
        k = (a.get("type", ""), a.get("address", ""))
        if k in seen:
            errs.append(f_duplicate("status.addresses[%d]" % i, GoRepr(
                'core.NodeAddress{Type:"%s", Address:"%s"}' % k)))
        seen.add(k)
    ospec = old.get("spec") or {}
    old_cidrs = ospec.get("podCIDRs") or []
    if old_cidrs:
        msg = 'node updates may not change podCIDR except from "" to valid'
        if len(old_cidrs) != len(cidrs):
            errs.append(f_forbidden("spec.podCIDRs", msg))
        else:
            for a, b in zip(old_cidrs, cidrs):
                if a != b:
                    errs.append(f_forbidden("spec.podCIDRs", msg))
    if ospec.get("providerID") and ospec["providerID"] != spec.get("providerID", ""):
        # 1.37's declarative immutability: the value is not shown (null)
        errs.append(f_invalid(
            "spec.providerID", None, "field cannot be %s once set" %
            ("modified" if spec.get("providerID") else "cleared")))
    # ValidateNode runs before ValidateNodeUpdate, so taint errors repeat
    if spec.get("taints"):
        errs += validate_taints(spec["taints"], "metadata.taints")
    return errs


SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
IP_FAMILIES = ["IPv4", "IPv6"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
SINGLE_STACK = "SingleStack"


def ip_family(ip):
    """"IPv4" or "IPv6" for an IP address, else None."""
    try:
        return "IPv%d" % ipaddress.ip_address(ip).version
    except ValueError:
        return None


def validate_ip_families(spec, ospec):
    """ValidateServiceClusterIPsRelatedFields and initIPFamilyFields' checks
    of spec.ipFamilies, spec.ipFamilyPolicy and spec.clusterIPs (ospec: the
    stored Service's spec on update, else None)."""
    errs = []
    fams = spec.get("ipFamilies") or []
    ips = spec.get("clusterIPs") or []
    seen = set()
    for i, f in enumerate(fams):
        if f not in IP_FAMILIES:
            errs.append(f_not_supported("spec.ipFamilies[%d]" % i, f, IP_FAMILIES))
        if f in seen:
            errs.append(f_duplicate("spec.ipFamilies[%d]" % i, f))
        seen.add(f)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errs.append(f_not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    if policy == SINGLE_STACK:
        if len(ips) == 2:
            errs.append(f_invalid("spec.ipFamilyPolicy", policy,
                                  "must be 'RequireDualStack' or 'PreferDualStack' when "
                                  "multiple cluster IPs are specified"))
        if len(fams) == 2:
            errs.append(f_invalid("spec.ipFamilyPolicy", policy,
                                  "must be 'RequireDualStack' or 'PreferDualStack' when "
                                  "multiple IP families are specified"))
    if ips != ["None"]:
        for i, ip in enumerate(ips[:len(fams)]):
            fam = ip_family(ip)
            if fam and fam != fams[i] and fams[i] in IP_FAMILIES:
                errs.append(f_invalid("spec.clusterIPs[%d]" % i, ip,
                                      "expected an %s value as indicated by `ipFamilies[%d]`"
                                      % (fams[i], i)))
    ofams = (ospec or {}).get("ipFamilies") or []
    if ofams and fams and ofams[0] != fams[0] and ips != ["None"] and \
            (ospec.get("clusterIPs") or []) != ["None"]:
        errs.append(f_invalid("spec.ipFamilies[0]",
                              GoRepr("[]core.IPFamily{%s}"
                                     % ", ".join('"%s"' % f for f in fams)),
                              "may not change once set"))
    return errs


def validate_lb_status(svc):
    errs = []
    spec = svc.get("spec") or {}
    ing = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    path = "status.loadBalancer.ingress"
    if ing and spec.get("type") != "LoadBalancer":
        return [f_forbidden(path, "may only be used when `spec.type` is 'LoadBalancer'")]
    for i, x in enumerate(ing):
        p = "%s[%d]" % (path, i)
        ip = x.get("ip", "")
        if ip and not is_ip(ip):
            errs.append(f_invalid(p + ".ip", ip,
                                  "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
        mode = x.get("ipMode")
        if mode is None and ip:
            errs.append(f_required(p + ".ipMode", "must be specified when `ip` is set"))
        elif mode is not None and not ip:
            errs.append(f_forbidden(p + ".ipMode", "may not be specified when `ip` is not set"))
        elif mode is not None and mode not in ("Proxy", "VIP"):
            errs.append(f_not_supported(p + ".ipMode", mode, ["Proxy", "VIP"]))
        hn = x.get("hostname", "")
        if hn:
            for m in is_dns1123_subdomain(hn):
                errs.append(f_invalid(p + ".hostname", hn, m))
            if is_ip(hn):
                errs.append(f_invalid(p + ".hostname", hn,
                                      "must be a DNS name, not an IP address"))
    return errs


def validate_service(svc, old, sub):
    md = svc.get("metadata", {})
    errs = validate_meta("Service", md, True)
    spec = svc.get("spec") or {}
    t = spec.get("type", "ClusterIP")
    if t not in SERVICE_TYPES:
        errs.append(f_not_supported("spec.type", t, SERVICE_TYPES))
    ports = spec.get("ports") or []
    if not ports and t != "ExternalName" and spec.get("clusterIP") != "None":
        errs.append(f_required("spec.ports", ""))
    names = set()
    for i, p in enumerate(ports):
        pp = "spec.ports[%d]" % i
        if len(ports) > 1 and not p.get("name"):
            errs.append(f_required(pp + ".name", ""))
        if p.get("name"):
            if p["name"] in names:
                errs.append(f_duplicate(pp + ".name", p["name"]))
            names.add(p["name"])
        port = p.get("port", 0)
        if not 1 <= port <= 65535:
            errs.append(f_invalid(pp + ".port", port,
                                  "must be between 1 and 65535, inclusive"))
        proto = p.get("protocol", "TCP")
        if proto not in PROTOCOLS:
            errs.append(f_not_supported(pp + ".protocol", proto, PROTOCOLS))
    if old is not None:
        ospec = old.get("spec") or {}
        oip = ospec.get("clusterIP", "")
        if oip and spec.get("clusterIP", "") != oip and t != "ExternalName":
            errs.append(f_invalid("spec.clusterIPs[0]",
                                  GoRepr("[]string{%s}" % ", ".join('"%s"' % x for x in spec.get("clusterIPs") or [])),
                                  "may not change once set"))
        errs += validate_meta_update(md, old.get("metadata", {}))
    if t != "ExternalName":
        errs += validate_ip_families(spec, (old or {}).get("spec") if old else None)
    if sub == "status" or old is None or \
            (svc.get("status") or {}) != (old.get("status") or {}):
        errs += validate_lb_status(svc)
    return errs


def validate_lease(lease, old):
    errs = validate_meta("Lease", lease.get("metadata", {}), True)
    spec = lease.get("spec") or {}
    d = spec.get("leaseDurationSeconds")
    if d is not None and d <= 0:
        errs.append(f_invalid("spec.leaseDurationSeconds", d, "must be greater than 0"))
    tr = spec.get("leaseTransitions")
    if tr is not None and tr < 0:
        errs.append(f_invalid("spec.leaseTransitions", tr, "must be greater than or equal to 0"))
    return errs


EVENT_TYPES = ["Normal", "Warning"]
REPORTING_INSTANCE_MAX = ACTION_MAX = REASON_MAX = 128  # characters
NOTE_MAX = 1024  # characters


def _legacy_event(ev, ns, controller_field, note_field):
    """legacyValidateEvent over a core-form event."""
    errs = []
    io_ns = (ev.get("involvedObject") or {}).get("namespace", "")
    if not ev.get("eventTime"):
        if not io_ns:
            if ns not in ("", "default"):
                errs.append(f_invalid("involvedObject.namespace", io_ns,
                                      "does not match event.namespace"))
        elif ns != io_ns:
            errs.append(f_invalid("involvedObject.namespace", io_ns,
                                  "does not match event.namespace"))
    else:
        if not io_ns and ns not in ("default", "kube-system"):
            errs.append(f_invalid("involvedObject.namespace", io_ns,
                                  "does not match event.namespace"))
        rc = ev.get("reportingComponent", "")
        if not rc:
            errs.append(f_required(controller_field, ""))
        for m in is_qualified_name(rc):
            errs.append(f_invalid(controller_field, rc, m))
        errs += _event_common(ev, note_field)
    for m in is_dns1123_subdomain(ns):
        errs.append(f_invalid("namespace", ns, m))
    return errs


def _event_common(ev, note_field):
    errs = []
    ri = ev.get("reportingInstance", "")
    if not ri:
        errs.append(f_required("reportingInstance", ""))
    if len(ri) > REPORTING_INSTANCE_MAX:
        errs.append(f_invalid("reportingInstance", "", "can have at most %d characters" % REPORTING_INSTANCE_MAX))
    act = ev.get("action", "")
    if not act:
        errs.append(f_required("action", ""))
    if len(act) > ACTION_MAX:
        errs.append(f_invalid("action", "", "can have at most %d characters" % ACTION_MAX))
    rs = ev.get("reason", "")
    if not rs:
        errs.append(f_required("reason", ""))
    if len(rs) > REASON_MAX:
        errs.append(f_invalid("reason", "", "can have at most %d characters" % REASON_MAX))
    if len(ev.get("message", "")) > NOTE_MAX:
        errs.append(f_invalid(note_field, "", "can have at most %d characters" % NOTE_MAX))
    return errs


def validate_event_core(ev, old):
    md = ev.get("metadata", {})
    errs = validate_meta("Event", md, True)
    return errs + _legacy_event(ev, md.get("namespace", ""), "reportingComponent",
                                "message")


def validate_event_v1(ev1, old):
    """ValidateEventCreate for events.k8s.io/v1 (legacy rules, then strict)."""
    import kresources
    ev = kresources.event_from_v1(ev1)
    md = ev.get("metadata", {})
    errs = validate_meta("Event", md, True)
    errs += _legacy_event(ev, md.get("namespace", ""), "reportingController", "note")
    if not ev.get("eventTime"):
        errs.append(f_required("eventTime", ""))
    t = ev.get("type", "")
    if t not in EVENT_TYPES:
        errs.append(f_invalid("type", "", "has invalid value: %s" % t))
    if ev.get("firstTimestamp"):
        errs.append(f_invalid("deprecatedFirstTimestamp", "", "needs to be unset"))
    if ev.get("lastTimestamp"):
        errs.append(f_invalid("deprecatedLastTimestamp", "", "needs to be unset"))
    if ev.get("count"):
        errs.append(f_invalid("deprecatedCount", "", "needs to be unset"))
    src = ev.get("source") or {}
    if src.get("component") or src.get("host"):
        errs.append(f_invalid("deprecatedSource", "", "needs to be unset"))
    rc = ev.get("reportingComponent", "")
    if not rc:
        errs.append(f_required("reportingController", ""))
    for m in is_qualified_name(rc):
        errs.append(f_invalid("reportingController", rc, m))
    errs += _event_common(ev, "note")
    return errs


def validate_secret(s, old):
    errs = validate_meta("Secret", s.get("metadata", {}), True)
    if old is not None and old.get("type", "Opaque") != s.get("type", "Opaque"):
        errs.append(f_invalid("type", s.get("type"), "field is immutable"))
    return errs


# ------------------------------------------------ CertificateSigningRequests
# pkg/apis/certificates/validation and pkg/registry/certificates/certificates
# (strategy.go): the request's self-signature is checked on create, spec is
# immutable, Approved/Denied change only through /approval, the certificate
# only through /status, and an Approved/Denied/Failed condition once there
# stays.

CSR_USAGES = sorted([
    "signing", "digital signature", "content commitment", "key encipherment",
    "key agreement", "data encipherment", "cert sign", "crl sign",
    "encipher only", "decipher only", "any", "server auth", "client auth",
    "code signing", "email protection", "s/mime", "ipsec end system",
    "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc"])
CSR_TRUE_ONLY = ("Approved", "Denied", "Failed")
_PEM_BLOCK_RE = re.compile(
    r"-----BEGIN ([^\n-]*)-----\r?\n(.*?)-----END \1-----", re.S)


def _openssl(args, data):
    import subprocess
    p = subprocess.run(["openssl"] + args, input=data, capture_output=True,
                       timeout=30)
    return p.returncode, p.stdout.decode("utf-8", "replace"), \
        p.stderr.decode("utf-8", "replace")


def csr_request_error(pem):
    """validateCSR: the first PEM block must be a CERTIFICATE REQUEST
    (certificates.ParseCSR) that parses and whose signature verifies
    (x509.CertificateRequest.CheckSignature), checked here with openssl;
    the messages are Go's."""
    m = _PEM_BLOCK_RE.search(pem)
    if m is None or m.group(1) != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    code, out, err = _openssl(["req", "-noout", "-text", "-verify"],
                              m.group(0).encode())
    if "Public Key Algorithm" not in out:
        return "asn1: structure error: malformed certificate request"
    if code == 0 and "verify OK" in out + err and "verify failure" not in out + err:
        return None
    if "id-ecPublicKey" in out:
        return "x509: ECDSA verification failure"
    if "ED25519" in out:
        return "x509: Ed25519 verification failure"
    return "crypto/rsa: verification error"


def _csr_pem(spec):
    try:
        return base64.b64decode(spec.get("request") or "", validate=True) \
            .decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return ""


def _csr_conditions(csr, old):
    """validateConditions, with the tolerances for stored data."""
    errs = []
    conds = (csr.get("status") or {}).get("conditions") or []
    oconds = ((old or {}).get("status") or {}).get("conditions") or []
    otypes = [c.get("type", "") for c in oconds]
    allow_both = "Approved" in otypes and "Denied" in otypes
    allow_dup = len(otypes) != len(set(otypes))
    allow_empty = "" in otypes
    seen, has_a, has_d = set(), False, False
    for i, c in enumerate(conds):
        f = "status.conditions[%d]" % i
        t, st = c.get("type", ""), c.get("status", "")
        if not t and not allow_empty:
            errs.append(f_required(f + ".type", ""))
        allowed = ["True"] if t in CSR_TRUE_ONLY else ["False", "True", "Unknown"]
        if not st:
            errs.append(f_required(f + ".status", ""))
        elif st not in allowed:
            errs.append(f_not_supported(f + ".status", st, allowed))
        if not allow_both:
            if t == "Approved":
                has_a = True
                if has_d:
                    errs.append(f_invalid(f + ".type", t,
                                          "Approved and Denied conditions are mutually exclusive"))
            elif t == "Denied":
                has_d = True
                if has_a:
                    errs.append(f_invalid(f + ".type", t,
                                          "Approved and Denied conditions are mutually exclusive"))
        if not allow_dup:
            if t in seen:
                errs.append(f_duplicate(f + ".type", t))
            seen.add(t)
    return errs


def _csr_certificate_error(cert_b64):
    """validateCertificate: CERTIFICATE blocks only, no headers, each one
    parses."""
    try:
        pem = base64.b64decode(cert_b64, validate=True).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return "must contain at least one CERTIFICATE PEM block"
    blocks = _PEM_BLOCK_RE.findall(pem)
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    for btype, body in blocks:
        if btype != "CERTIFICATE":
            return 'only CERTIFICATE PEM blocks are allowed, found "%s"' % btype
        if ":" in body.split("\n", 1)[0]:
            return "no PEM block headers are permitted"
        code, _, _ = _openssl(["x509", "-noout"],
                              ("-----BEGIN CERTIFICATE-----\n" + body +
                               "-----END CERTIFICATE-----\n").encode())
        if code != 0:
            return "x509: malformed certificate"
    return None


def validate_csr(csr, old, sub=""):
    """certificates.k8s.io/v1 CertificateSigningRequest, on create (old
    None) and on update of the object, /status or /approval (sub)."""
    errs = validate_meta("CertificateSigningRequest", csr.get("metadata", {}), False)
    spec = csr.get("spec") or {}
    ospec = (old or {}).get("spec") or {}
    if old is None:
        err = csr_request_error(_csr_pem(spec))
        if err is not None:
            errs.append(f_invalid("spec.request", "[]byte{...}", err))
    usages = spec.get("usages") or []
    if not usages:
        errs.append(f_required("spec.usages", ""))
    ousages = ospec.get("usages") or []
    if not any(u not in CSR_USAGES for u in ousages):
        for i, u in enumerate(usages):
            if u not in CSR_USAGES:
                errs.append(f_not_supported("spec.usages[%d]" % i, u, CSR_USAGES))
    if len(ousages) == len(set(ousages)):
        for i, u in enumerate(usages):
            if u in usages[:i]:
                errs.append(f_duplicate("spec.usages[%d]" % i, u))
    signer = spec.get("signerName") or ""
    if not signer:
        errs.append(f_required("spec.signerName", ""))
    elif signer == "kubernetes.io/legacy-unknown" and \
            ospec.get("signerName") != signer:
        errs.append(f_invalid("spec.signerName", signer,
                              "the legacy signerName is not allowed via this API version"))
    elif "/" not in signer:
        errs.append(f_invalid("spec.signerName", signer,
                              "must be a fully qualified domain and path of the form 'example.com/signer-name'"))
    exp = spec.get("expirationSeconds")
    if isinstance(exp, int) and exp < 600:
        errs.append(f_invalid("spec.expirationSeconds", exp,
                              "may not specify a duration less than 600 seconds (10 minutes)"))
    errs += _csr_conditions(csr, old)
    st = csr.get("status") or {}
    ost = (old or {}).get("status") or {}
    cert, ocert = st.get("certificate") or "", ost.get("certificate") or ""
    # allowArbitraryCertificate: an update that leaves it alone, or stored
    # data that was never valid
    arbitrary = old is not None and (
        cert == ocert or (ocert and _csr_certificate_error(ocert) is not None))
    if cert and not arbitrary:
        err = _csr_certificate_error(cert)
        if err is not None:
            errs.append(f_invalid("status.certificate", "<certificate data>", err))
    if old is None:
        return errs
    errs_meta = validate_meta_update(csr.get("metadata", {}), old.get("metadata", {}))
    conds = st.get("conditions") or []
    oconds = ost.get("conditions") or []

    def of_type(cs, t):
        return [c for c in cs if c.get("type") == t]
    for t in ("Approved", "Denied", "Failed"):
        if len(of_type(conds, t)) < len(of_type(oconds, t)):
            errs.append(f_forbidden("status.conditions",
                                    'updates may not remove a condition of type "%s"' % t))
    if sub != "approval":
        for t in ("Approved", "Denied"):
            n, o = of_type(conds, t), of_type(oconds, t)
            if len(n) > len(o):
                errs.append(f_forbidden("status.conditions",
                                        'updates may not add a condition of type "%s"' % t))
            elif len(n) == len(o) and n != o:
                errs.append(f_forbidden("status.conditions",
                                        'updates may not modify a condition of type "%s"' % t))
    if cert != ocert:
        if sub != "status":
            errs.append(f_forbidden("status.certificate",
                                    "updates may not set certificate content"))
        elif ocert:
            errs.append(f_forbidden("status.certificate",
                                    "updates may not modify existing certificate content"))
    return errs + errs_meta


def csr_prepare_create(csr, who):
    """PrepareForCreate: the requesting user's identity (who: user, groups,
    uid) replaces whatever the client sent, and the status starts empty (no
    pre-approved requests). who None keeps the identity the object names."""
    spec = csr.setdefault("spec", {})
    if who is not None:
        user, groups, uid = who
        for k in ("username", "uid", "groups", "extra"):
            spec.pop(k, None)
        if user:
            spec["username"] = user
        if uid:
            spec["uid"] = uid
        if groups:
            spec["groups"] = list(groups)
    csr["status"] = {}


def _preserve_conditions(new, old, t):
    """preserveConditionInstances: the stored instances of type t stand in
    for the sent ones, position by position; sent extras stay (validation
    then refuses them)."""
    oc = [c for c in old if c.get("type") == t]
    out, i = [], 0
    for c in new:
        if c.get("type") == t:
            out.append(oc[i] if i < len(oc) else c)
            i += 1
        else:
            out.append(c)
    return out


def csr_prepare_update(new, old, sub, now):
    """PrepareForUpdate of the object, /status and /approval strategies."""
    new["spec"] = old.get("spec", {})
    ost = old.get("status") or {}
    if sub == "":
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
        return
    st = new.get("status")
    if not isinstance(st, dict):
        st = new["status"] = {}
    conds = st.get("conditions") or []
    oconds = ost.get("conditions") or []
    if sub == "status":
        conds = _preserve_conditions(conds, oconds, "Approved")
        conds = _preserve_conditions(conds, oconds, "Denied")
    else:
        if ost.get("certificate"):
            st["certificate"] = ost["certificate"]
        else:
            st.pop("certificate", None)
        conds = _preserve_conditions(conds, oconds, "Failed")
    # populateConditionTimestamps
    for c in conds:
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            same = [o for o in oconds if o.get("type") == c.get("type") and
                    o.get("status") == c.get("status") and
                    o.get("lastTransitionTime")]
            c["lastTransitionTime"] = same[0]["lastTransitionTime"] if same else now
    if conds:
        st["conditions"] = conds
    else:
        st.pop("conditions", None)


def validate(res, obj, old, sub):
    """Field errors for obj (old: the stored object on update, else None)."""
    k = res.kind
    if res.group == "" and k == "Node":
        return validate_node(obj, old)
    if res.group == "" and k == "Service":
        return validate_service(obj, old, sub)
    if res.group == "coordination.k8s.io":
        return validate_lease(obj, old)
    if res.group == "" and k == "Event":
        return validate_event_core(obj, old)
    if res.group == "events.k8s.io":
        return validate_event_v1(obj, old)
    if k == "Secret":
        return validate_secret(obj, old)
    if res.group == "certificates.k8s.io":
        return validate_csr(obj, old, sub)
    errs = validate_meta(k, obj.get("metadata", {}), res.namespaced)
    if old is not None:
        errs += validate_meta_update(obj.get("metadata", {}), old.get("metadata", {}))
    return errs


# -------------------------------------------------------------- defaults

def defaults(res, obj, old, registry, sub=""):
    """Apply the v1 defaulting functions; allocate IPs/ports for Services."""
    k = res.kind
    if res.group == "" and k == "Node":
        obj.setdefault("spec", {})
        st = obj.setdefault("status", {})
        de = st.setdefault("daemonEndpoints", {})
        de.setdefault("kubeletEndpoint", {}).setdefault("Port", 0)
        ni = st.setdefault("nodeInfo", {})
        for f in ("machineID", "systemUUID", "bootID", "kernelVersion",
                  "osImage", "containerRuntimeVersion", "kubeletVersion",
                  "kubeProxyVersion", "operatingSystem", "architecture"):
            ni.setdefault(f, "")
        spec = obj["spec"]
        if spec.get("podCIDRs") and not spec.get("podCIDR"):
            spec["podCIDR"] = spec["podCIDRs"][0]
        elif spec.get("podCIDR") and not spec.get("podCIDRs"):
            spec["podCIDRs"] = [spec["podCIDR"]]
    elif res.group == "" and k == "Pod":
        _pod_defaults(obj, old)
    elif res.group == "" and k == "Service":
        _service_defaults(obj, old, registry, sub)
    elif res.group == "" and k == "Namespace":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        md = obj.setdefault("metadata", {})
        md.setdefault("labels", {})["kubernetes.io/metadata.name"] = md.get("name", "")
    elif res.group == "" and k == "Secret":
        obj.setdefault("type", "Opaque")
        sd = obj.pop("stringData", None)
        if sd:
            import base64
            d = obj.setdefault("data", {}) or {}
            for kk, v in sd.items():
                d[kk] = base64.b64encode(v.encode()).decode()
            obj["data"] = d
    elif res.group == "" and k == "Event":
        obj.setdefault("involvedObject", {})
        obj.setdefault("source", {})
        for f in ("firstTimestamp", "lastTimestamp", "eventTime"):
            obj.setdefault(f, None)
        obj.setdefault("reportingComponent", "")
        obj.setdefault("reportingInstance", "")
    elif res.group == "coordination.k8s.io":
        obj.setdefault("spec", {})
    elif res.group == "events.k8s.io":
        obj.setdefault("deprecatedSource", {})
        obj.setdefault("deprecatedFirstTimestamp", None)
        obj.setdefault("deprecatedLastTimestamp", None)
        obj.setdefault("eventTime", None)


def _pod_qos(spec):
    """qos.GetPodQOS: Guaranteed when every container's requests equal its
    limits for both cpu and memory, BestEffort when none sets any,
    Burstable otherwise."""
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    requests, limits, all_equal = {}, {}, True
    for c in containers:
        r = c.get("resources") or {}
        req, lim = dict(r.get("limits") or {}), r.get("limits") or {}
        req.update(r.get("requests") or {})  # requests default to limits
        for name in ("cpu", "memory"):
            if name in req:
                requests[name] = True
            if name in lim:
                limits[name] = True
            if name not in lim or req.get(name) != lim.get(name):
                all_equal = False
    if not requests and not limits:
        return "BestEffort"
    if all_equal and len(limits) == 2:
        return "Guaranteed"
    return "Burstable"


def _pod_defaults(obj, old):
    """podStrategy: a new Pod's status is phase Pending with its QoS class,
    whatever the request held; an update keeps the QoS class."""
    if old is None:
        obj["status"] = {"phase": "Pending", "qosClass": _pod_qos(obj.get("spec") or {})}
        return
    qos = (old.get("status") or {}).get("qosClass")
    if qos:
        obj.setdefault("status", {})["qosClass"] = qos


def _drop_type_dependent(spec, ospec):
    """dropTypeDependentFields: what the old type allocated goes when the
    new type does not need it (unless the update changed it)."""
    t, ot = spec.get("type"), ospec.get("type")
    if ot in NODE_PORT_TYPES and t not in NODE_PORT_TYPES:
        old_np = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                  for p in ospec.get("ports") or []}
        for p in spec.get("ports") or []:
            k = (p.get("port"), p.get("protocol", "TCP"))
            if p.get("nodePort") and p.get("nodePort") == old_np.get(k):
                del p["nodePort"]
    if ot == "LoadBalancer" and t != "LoadBalancer":
        if spec.get("healthCheckNodePort") == ospec.get("healthCheckNodePort"):
            spec.pop("healthCheckNodePort", None)
        if spec.get("allocateLoadBalancerNodePorts") == \
                ospec.get("allocateLoadBalancerNodePorts"):
            spec.pop("allocateLoadBalancerNodePorts", None)
        if spec.get("loadBalancerClass") == ospec.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    if ot in NODE_PORT_TYPES and t not in NODE_PORT_TYPES and \
            spec.get("externalTrafficPolicy") == ospec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)


def _service_ip_families(spec, ospec, old):
    """initIPFamilyFields on a dual-stack cluster whose service CIDRs are
    IPv4 first, then IPv6: the policy inferred (the stored one on update;
    RequireDualStack for a headless Service without selector; else
    SingleStack), a single-stack update dropping the secondary family and
    cluster IP it kept, the families inferred from given cluster IPs, IPv4
    by default, and the other family added unless SingleStack. What
    validation refuses is left as it is."""
    policy = spec.get("ipFamilyPolicy")
    if policy is None:
        if old is not None and ospec.get("ipFamilyPolicy"):
            policy = ospec["ipFamilyPolicy"]
        elif spec.get("clusterIP") == "None" and not spec.get("selector"):
            policy = "RequireDualStack"
        else:
            policy = SINGLE_STACK
        spec["ipFamilyPolicy"] = policy
    fams = spec.get("ipFamilies") or []
    ips = spec.get("clusterIPs") or []
    if policy not in IP_FAMILY_POLICIES or not isinstance(fams, list) or \
            any(f not in IP_FAMILIES for f in fams) or len(set(fams)) != len(fams) or \
            len(fams) > 2 or len(ips) > 2:
        return
    if old is not None and policy == SINGLE_STACK:
        if ips == ospec.get("clusterIPs") and len(ips) > 1:
            ips = spec["clusterIPs"] = ips[:1]
        if fams == ospec.get("ipFamilies") and len(fams) > 1:
            fams = fams[:1]
    if policy == SINGLE_STACK and (len(ips) == 2 or len(fams) == 2):
        spec["ipFamilies"] = fams
        return
    fams = list(fams)
    for i, ip in enumerate(ips):
        if ip == "None":
            break
        if i >= len(fams) and ip_family(ip):
            fams.append(ip_family(ip))
    if not fams:
        fams = ["IPv4"]
    if policy != SINGLE_STACK and len(fams) == 1:
        fams.append("IPv6" if fams[0] == "IPv4" else "IPv4")
    spec["ipFamilies"] = fams


def _service_cluster_ips(spec, ospec, old, registry):
    """The cluster IPs kept from the stored Service, the IP families, then
    one cluster IP allocated for each family that has none (none for a
    headless Service)."""
    if not spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIP"] = ospec.get("clusterIP", "")
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        oips = ospec.get("clusterIPs") or []
        spec["clusterIPs"] = list(oips) if oips[:1] == [spec["clusterIP"]] else \
            [spec["clusterIP"]]
    _service_ip_families(spec, ospec, old)
    ips = list(spec.get("clusterIPs") or [])
    if ips[:1] != ["None"]:
        fams = [f for f in spec.get("ipFamilies") or [] if f in IP_FAMILIES][:2] or ["IPv4"]
        if spec.get("ipFamilyPolicy") == SINGLE_STACK:
            fams = fams[:1]
        for fam in fams[len(ips):]:
            ips.append(registry.allocate_cluster_ip(fam) if registry else
                       ("10.96.0.10" if fam == "IPv4" else "fd00:10:96::a"))
    spec["clusterIPs"] = ips
    spec["clusterIP"] = ips[0] if ips else ""


NODE_PORT_TYPES = ("NodePort", "LoadBalancer")


def _service_node_ports(obj, spec, ospec, registry):
    """The service REST's node ports for a NodePort or LoadBalancer Service:
    a port that omits nodePort gets the stored Service's value back by port
    name when no other port uses it (patchAllocatedValues); a port that names
    one claims it unless the stored Service holds it already, a port given
    to another Service or outside the range being 422 on that port's field;
    then each port still without one gets a free one (unless
    allocateLoadBalancerNodePorts is false). On an error the values this
    Service does not hold are dropped from obj before raising, so that the
    caller's release frees only what the request claimed."""
    ports = spec.get("ports") or []
    held = set()
    if ospec.get("type") in NODE_PORT_TYPES:
        oports = ospec.get("ports") or []
        held = {p.get("nodePort") for p in oports} - {None, 0}
        used = held & {p.get("nodePort") for p in ports}
        by_name = {p.get("name", ""): p.get("nodePort") for p in oports}
        for p in ports:
            v = by_name.get(p.get("name", ""))
            if not p.get("nodePort") and v and v not in used:
                p["nodePort"] = v
    claimed = set()
    for i, p in enumerate(ports):
        v = p.get("nodePort")
        if not v or not registry or v in held or v in claimed:
            continue
        err = registry.claim_node_port(v)
        if err:
            for q in ports:
                if q.get("nodePort") not in held | claimed:
                    q.pop("nodePort", None)
            raise kerrors.invalid("", "Service", (obj.get("metadata") or {}).get("name", ""),
                                  [f_invalid("spec.ports[%d].nodePort" % i, v, err)])
        claimed.add(v)
    if spec.get("allocateLoadBalancerNodePorts", True) is False:
        return
    for p in ports:
        if not p.get("nodePort"):
            p["nodePort"] = registry.allocate_node_port() if registry else 30000


def _service_defaults(obj, old, registry, sub=""):
    spec = obj.setdefault("spec", {})
    t = spec.setdefault("type", "ClusterIP")
    if old is not None and sub != "status":
        _drop_type_dependent(spec, old.get("spec") or {})
        if t != "LoadBalancer":
            # the registry clears a load balancer status that no longer
            # applies, without waiting for the controller
            obj.setdefault("status", {})["loadBalancer"] = {}
    spec.setdefault("sessionAffinity", "None")
    ospec = (old or {}).get("spec") or {}
    if t != "ExternalName":
        _service_cluster_ips(spec, ospec, old, registry)
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for p in spec.get("ports") or []:
        p.setdefault("protocol", "TCP")
        if "targetPort" not in p or p["targetPort"] in (0, ""):
            p["targetPort"] = p.get("port")
    if t in NODE_PORT_TYPES:
        _service_node_ports(obj, spec, ospec, registry)
        spec.setdefault("externalTrafficPolicy", "Cluster")
    # like the service REST's healthCheckNodePort allocation: a
    # LoadBalancer with externalTrafficPolicy Local gets one (kept across
    # updates), or claims the one it asks for; one that stops needing it
    # has it released and cleared
    if t == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local":
        hc = spec.get("healthCheckNodePort")
        if not hc:
            spec["healthCheckNodePort"] = ospec.get("healthCheckNodePort") or \
                (registry.allocate_node_port() if registry else 30001)
        elif registry and hc != ospec.get("healthCheckNodePort"):
            err = registry.claim_node_port(hc)
            if err:
                del spec["healthCheckNodePort"]  # not this Service's: nothing to release
                raise kerrors.internal("failed to allocate requested HealthCheck NodePort "
                                       "%s: %s" % (hc, err))
    elif old is not None and sub != "status" and spec.get("healthCheckNodePort") and \
            spec.get("healthCheckNodePort") == ospec.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort")
    if t == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    st = obj.setdefault("status", {})
    lb = st.setdefault("loadBalancer", {})
    for ing in lb.get("ingress") or []:
        if ing.get("ip") and "ipMode" not in ing:
            ing["ipMode"] = "VIP"
