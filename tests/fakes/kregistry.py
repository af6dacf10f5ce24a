"""REST semantics of the resources: get, list, watch, create, update, patch,
delete, with the registry strategies of the real server (defaults, status
subresources, preconditions, no-op writes, finalizers) and its validation."""

import datetime
import json
import random
import re
import time
import uuid

import kerrors
import kpatch
import ktable
import kproto
import kresources
import krbac
import kschema
import kstore
import kvalidate

NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"

GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # strconv.ParseBool

PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json")


def now_time():
    """metav1.Time: RFC 3339 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _canon(o):
    return json.dumps(o, sort_keys=True)


def _strip_volatile(o):
    o = kstore.jcopy(o)
    md = o.get("metadata", {})
    md.pop("resourceVersion", None)
    md.pop("managedFields", None)
    return o


def _q(query, k, default=""):
    v = query.get(k)
    return v[0] if v else default


# ------------------------------------------------------------- selectors

_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_RE = re.compile(
    r"\s*([A-Za-z0-9./_-]+)\s*(==|=|!=|\s+in\s+|\s+notin\s+)\s*(\([^)]*\)|[^,\s]*)\s*$")


def _split_selector(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [x for x in out if x.strip()]


NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def _taint_not_ready(node):
    """The TaintNodesByCondition admission plugin (on by default, kubeadm
    keeps it): a Node created through the API gets the not-ready NoSchedule
    taint unless it has it already; the node lifecycle controller removes it
    once the Node is Ready. Objects the harness seeds are restored data, not
    requests: no admission runs on them."""
    spec = node.get("spec")
    if not isinstance(spec, dict):
        spec = node["spec"] = {}
    taints = spec.get("taints")
    if not isinstance(taints, list):
        if taints is not None:
            return  # validation refuses it
        taints = spec["taints"] = []
    if not any(isinstance(t, dict) and t.get("key") == NOT_READY_TAINT["key"]
               and t.get("effect") == "NoSchedule" for t in taints):
        taints.append(dict(NOT_READY_TAINT))


def parse_label_selector(s):
    """labels.Parse reduced: =, ==, !=, in, notin, key, !key."""
    reqs = []
    for part in _split_selector(s):
        p = part.strip()
        if re.match(r"^!\s*[A-Za-z0-9./_-]+$", p):
            reqs.append(("!", p[1:].strip(), None))
            continue
        if re.match(r"^[A-Za-z0-9./_-]+$", p):
            reqs.append(("exists", p, None))
            continue
        m = _LABEL_RE.match(p)
        if not m:
            raise kerrors.bad_request(
                "unable to parse requirement: found '%s', expected: identifier" % p)
        key, op, val = m.group(1), m.group(2).strip(), m.group(3)
        if op in ("in", "notin"):
            if not (val.startswith("(") and val.endswith(")")):
                raise kerrors.bad_request(
                    "unable to parse requirement: found '%s', expected: '('" % val)
            vals = [v.strip() for v in val[1:-1].split(",") if v.strip()]
            reqs.append((op, key, vals))
        else:
            if op == "==":
                op = "="
            if val.startswith("("):
                raise kerrors.bad_request(
                    "unable to parse requirement: found '(', expected: identifier")
            if val[:1] in ("=", "!", "<", ">"):
                raise kerrors.bad_request(
                    "unable to parse requirement: found '%s', expected: identifier" % val[0])
            if not _LABEL_VALUE_RE.match(val):
                raise kerrors.bad_request(
                    "unable to parse requirement: values[0][%s]: Invalid value: %s: a valid "
                    "label must be an empty string or consist of alphanumeric characters, "
                    "'-', '_' or '.', and must start and end with an alphanumeric character "
                    "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                    % (key, kerrors.go_value(val)))
            reqs.append((op, key, val))
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for op, k, v in reqs:
        if op == "exists" and k not in labels:
            return False
        if op == "!" and k in labels:
            return False
        if op == "=" and labels.get(k) != v:
            return False
        if op == "!=" and k in labels and labels[k] == v:
            return False
        if op == "in" and labels.get(k) not in v:
            return False
        if op == "notin" and k in labels and labels[k] in v:
            return False
    return True


FIELD_LABELS = {
    "events": ["involvedObject.kind", "involvedObject.namespace",
               "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent",
               "source", "type"],
    "secrets": ["type"],
    "certificatesigningrequests": ["spec.signerName"],
    "nodes": ["spec.unschedulable"],
    "namespaces": ["status.phase"],
    "services": ["spec.clusterIP", "spec.type"],
    "pods": ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
             "status.podIP", "status.nominatedNodeName"],
}


def parse_field_selector(s, res):
    reqs = []
    for part in _split_selector(s):
        p = part.strip()
        m = re.match(r"^([A-Za-z0-9._-]+)\s*(==|=|!=)\s*(.*)$", p)
        if not m:
            raise kerrors.bad_request("invalid selector: '%s'; can't understand '%s'" % (s, p))
        k, op, v = m.group(1), m.group(2), m.group(3)
        allowed = ["metadata.name", "metadata.namespace"] + \
            FIELD_LABELS.get(res.name, [])
        if res.group == "events.k8s.io":
            allowed = ["metadata.name", "metadata.namespace", "regarding.kind",
                       "regarding.namespace", "regarding.name", "regarding.uid",
                       "reason", "reportingController", "type"]
        if k not in allowed:
            raise kerrors.bad_request('field label not supported: %s' % k)
        reqs.append((k, "!=" if op == "!=" else "=", v))
    return reqs


def _field_value(obj, path):
    if path == "source" and "source" in obj:
        return (obj.get("source") or {}).get("component", "")
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def fields_match(reqs, obj):
    for k, op, v in reqs:
        got = _field_value(obj, k)
        if op == "=" and got != v:
            return False
        if op == "!=" and got == v:
            return False
    return True


# --------------------------------------------------------- managed fields

def _fields_v1(v, path, kind):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out["f:" + k] = _fields_v1(x, path + [k], kind)
        return out
    if isinstance(v, list):
        strat, mkey = kpatch._strategy(kind, ".".join(path))
        if strat != "merge":
            return {}
        out = {}
        for x in v:
            if isinstance(x, dict) and mkey in x:
                e = _fields_v1(x, path, kind)
                e["."] = {}
                out["k:" + json.dumps({mkey: x[mkey]}, separators=(",", ":"))] = e
            else:
                out["v:" + json.dumps(x, separators=(",", ":"))] = {}
        return out
    return {}


def _managed_entry(obj, manager, operation, api_version, sub, kind):
    o = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    md = {k: v for k, v in o.get("metadata", {}).items()
          if k in ("labels", "annotations", "finalizers", "ownerReferences")}
    o["metadata"] = md
    if not md:
        del o["metadata"]
    if sub == "status":
        o = {"status": o.get("status", {})}
    else:
        o.pop("status", None)
    e = {"apiVersion": api_version, "fieldsType": "FieldsV1",
         "fieldsV1": _fields_v1(o, [], kind), "manager": manager,
         "operation": operation, "time": now_time()}
    if sub:
        e["subresource"] = sub
    return e


def _manager(h, query):
    fm = _q(query, "fieldManager")
    if fm:
        return fm
    ua = h.headers.get("User-Agent", "") if h is not None else ""
    return ua.split("/")[0] if ua else "unknown"


# ----------------------------------------------------------------- registry

class View(object):
    """The store as one resource sees it (events.k8s.io Events are stored
    as core Events and converted on the way in and out)."""

    def __init__(self, store, res):
        self.store = store
        self.rkey = kresources.storage_key(res)
        self.conv = res.group == "events.k8s.io"

    def out(self, o):
        return kresources.event_to_v1(o) if self.conv and o is not None else o

    def into(self, o):
        return kresources.event_from_v1(o) if self.conv else o

    def get(self, ns, name):
        return self.out(self.store.get(self.rkey, ns, name))

    def snapshot(self, ns=None, at_rv=None):
        rv, items = self.store.snapshot(self.rkey, ns, at_rv)
        return rv, [(k, self.out(o)) for k, o in items]

    def create(self, obj):
        return self.out(self.store.create(self.rkey, self.into(obj)))

    def update(self, obj, expect_rv=None):
        st, o = self.store.update(self.rkey, self.into(obj), expect_rv)
        return st, self.out(o)

    def delete(self, ns, name, expect_rv=None):
        st, o = self.store.delete(self.rkey, ns, name, expect_rv)
        return st, self.out(o)

    def changes_since(self, since_rv, timeout, wid=None, epoch=None):
        changes, cur = self.store.changes_since(self.rkey, since_rv, timeout,
                                                wid, epoch)
        if self.conv:
            changes = [kstore.Change(c.rv, c.type, c.rkey, c.ns, c.name,
                                     self.out(c.obj), self.out(c.prev))
                       for c in changes]
        return changes, cur


# the allocators' ranges: kind's service CIDRs 10.96.0.0/16 and
# fd00:10:96::/112, the default --service-node-port-range 30000-32767
SERVICE_IPV4 = ["10.96.%d.%d" % (a, b) for a in range(256) for b in range(2, 255)]
SERVICE_IPV6 = ["fd00:10:96::%x" % i for i in range(2, 0x10000)]
NODE_PORTS = list(range(30000, 32768))


class Registry(object):
    """Serves resource requests over a kstore.Store."""

    def __init__(self, store, server):
        self.store = store
        self.server = server
        self._svc_ips = set()
        self._node_ports = set()
        self.node_port_range = NODE_PORTS  # a test may narrow it

    def bootstrap(self):
        """Default namespaces and RBAC policy of a fresh cluster."""
        for ns in NAMESPACES:
            if self.store.get(("", "namespaces"), "", ns) is None:
                self._create_internal(kresources.lookup("", "v1", "namespaces"),
                                      {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": ns}}, "kube-apiserver")
        for o in krbac.bootstrap_policy():
            r = kresources.for_object(o)
            if self.store.get((r.group, r.name), "", o["metadata"]["name"]) is None:
                self._create_internal(r, o, "kube-apiserver")
        if self.store.get(("", "services"), "default", "kubernetes") is None:
            self._create_internal(
                kresources.lookup("", "v1", "services"),
                {"apiVersion": "v1", "kind": "Service",
                 "metadata": {"name": "kubernetes", "namespace": "default",
                              "labels": {"component": "apiserver",
                                         "provider": "kubernetes"}},
                 "spec": {"clusterIP": "10.96.0.1",
                          "ports": [{"name": "https", "port": 443,
                                     "protocol": "TCP", "targetPort": 6443}]}},
                "kube-apiserver")

    def _create_internal(self, res, obj, manager):
        obj = kstore.jcopy(obj)
        self._prepare_create(res, obj, obj["metadata"].get("namespace", ""),
                             manager, None)
        View(self.store, res).create(obj)

    def external(self, res, obj):
        """The object as served: kind/apiVersion set."""
        obj = dict(obj)
        obj["apiVersion"] = kresources.api_version(res)
        obj["kind"] = res.kind
        return obj

    # -- dispatch ----------------------------------------------------------

    def serve(self, h, res, info, query, body, user, groups, uid):
        if info.subresource and info.subresource not in res.subresources:
            raise _nf()
        if not res.storage:
            return self._review(h, res, info, body, user, groups, uid)
        if res.namespaced and not info.namespace and info.name:
            raise _nf()
        if not res.namespaced and info.namespace and res.name != "namespaces":
            raise _nf()
        ns = info.namespace if res.namespaced else ""
        v = info.verb
        if v == "get":
            o = View(self.store, res).get(ns, info.name)
            if o is None:
                raise kerrors.not_found(res.group, res.name, info.name)
            if ktable.wants_table(h.headers.get("Accept")):
                return h.reply(200, ktable.table(
                    res, [o], {"resourceVersion": o["metadata"]["resourceVersion"]}))
            return h.reply(200, self.external(res, o))
        if v == "list":
            out = self.list(res, (info.namespace or None) if res.namespaced else None, query)
            if ktable.wants_table(h.headers.get("Accept")):
                out = ktable.table(res, out["items"], out["metadata"])
            return h.reply(200, out)
        if v == "watch":
            return self.watch(h, res, info, query)
        if v == "create":
            if res.namespaced and not info.namespace:
                raise _nf()
            code, out, warn = self.create(res, ns, body, query, _manager(h, query),
                                          ctype=h.headers.get("Content-Type", ""),
                                          who=(user, groups, uid))
            return h.reply(code, out, _warn_headers(warn))
        if v == "update":
            code, out, warn = self.update(res, info.subresource, ns, info.name,
                                          body, query, _manager(h, query),
                                          ctype=h.headers.get("Content-Type", ""),
                                          who=(user, groups, uid))
            return h.reply(code, out, _warn_headers(warn))
        if v == "patch":
            code, out, warn = self.patch(res, info.subresource, ns, info.name,
                                         h.headers.get("Content-Type", ""),
                                         body, query, _manager(h, query),
                                         who=(user, groups, uid))
            return h.reply(code, out, _warn_headers(warn))
        if v == "delete":
            code, out = self.delete(res, ns, info.name, body, query)
            return h.reply(code, out)
        if v == "deletecollection":
            return h.reply(200, self.delete_collection(res, (info.namespace or None) if res.namespaced else None, query))
        raise kerrors.method_not_allowed(h.command, res.kind)

    # -- reviews -------------------------------------------------------------

    def _review(self, h, res, info, body, user, groups, uid):
        if info.verb != "create":
            raise kerrors.StatusError(
                405, "MethodNotAllowed",
                "the server does not allow this method on the requested resource", {})
        obj = self._decode_body(res, body, {}, h.headers.get("Content-Type", ""))
        av = kresources.api_version(res)
        if res.name == "selfsubjectreviews":
            ui = {"username": user, "groups": groups}
            if uid:
                ui["uid"] = uid
            out = {"kind": res.kind, "apiVersion": av,
                   "metadata": {"creationTimestamp": now_time()},
                   "status": {"userInfo": ui}}
            return h.reply(201, out)
        if res.name == "tokenreviews":
            tok = (obj.get("spec") or {}).get("token", "")
            if not tok:
                raise kerrors.invalid(res.group, res.kind, "", [
                    kerrors.f_required("spec.token", "")])
            out = {"kind": res.kind, "apiVersion": av,
                   "metadata": {"creationTimestamp": None},
                   "spec": obj.get("spec"),
                   "status": self.server.token_review(tok)}
            return h.reply(201, out)
        spec = obj.get("spec") or {}
        if res.name == "selfsubjectaccessreviews":
            s_user, s_groups = user, groups
        else:
            s_user, s_groups = spec.get("user", ""), spec.get("groups") or []
            if not s_user and not s_groups:
                raise kerrors.invalid(res.group, res.kind, "", [
                    kerrors.f_invalid("spec.user", "",
                                      "at least one of user or group must be specified")])
        ra = spec.get("resourceAttributes")
        na = spec.get("nonResourceAttributes")
        if ra:
            a = krbac.Attributes(s_user, s_groups, ra.get("verb", ""), "", True,
                                 ra.get("group", ""), ra.get("version", ""),
                                 ra.get("resource", ""), ra.get("subresource", ""),
                                 ra.get("namespace", ""), ra.get("name", ""))
        elif na:
            a = krbac.Attributes(s_user, s_groups, na.get("verb", ""),
                                 na.get("path", ""))
        else:
            raise kerrors.invalid(res.group, res.kind, "", [
                kerrors.f_invalid("spec.resourceAttributes", None,
                                  "exactly one of nonResourceAttributes or resourceAttributes must be specified")])
        ok, reason = self.server.authz.authorize(a)
        st = {"allowed": ok}
        if ok:
            st["reason"] = 'RBAC: allowed by ClusterRoleBinding'
        elif reason:
            st["reason"] = reason
        out = {"kind": res.kind, "apiVersion": av,
               "metadata": {"creationTimestamp": None}, "spec": spec,
               "status": st}
        return h.reply(201, out)

    # -- list / watch --------------------------------------------------------

    def _selectors(self, res, query):
        ls = parse_label_selector(_q(query, "labelSelector"))
        fs = parse_field_selector(_q(query, "fieldSelector"), res)
        return ls, fs

    def _matches(self, o, ns, ls, fs):
        if o is None:
            return False
        md = o.get("metadata", {})
        if ns is not None and md.get("namespace", "") != ns:
            return False
        return labels_match(ls, md.get("labels")) and fields_match(fs, o)

    def list(self, res, ns, query):
        ls, fs = self._selectors(res, query)
        rv_param = _q(query, "resourceVersion")
        match = _q(query, "resourceVersionMatch")
        cont = _q(query, "continue")
        limit_s = _q(query, "limit")
        limit = 0
        if limit_s:
            try:
                limit = int(limit_s)
            except ValueError:
                raise kerrors.bad_request('invalid value for "limit": %s' % limit_s)
        if cont and rv_param:
            raise kerrors.bad_request(
                "specifying resource version is not allowed when using continue")
        if match and not rv_param:
            raise kerrors.bad_request(
                "resourceVersionMatch is forbidden unless resourceVersion is provided")
        if match and match not in ("Exact", "NotOlderThan"):
            raise kerrors.bad_request(
                'resourceVersionMatch: Unsupported value: "%s"' % match)
        view = View(self.store, res)
        at_rv = None
        start = ""
        if rv_param:
            try:
                n = int(rv_param)
            except ValueError:
                raise _invalid_rv(rv_param)
            # rv=N with a limit and no match is the legacy exact read
            if match == "Exact" or (n != 0 and limit and not match):
                if n == 0:
                    raise kerrors.bad_request("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")
                at_rv = n
                if n > self.store.current_rv():
                    raise kerrors.StatusError(
                        504, "Timeout",
                        "Too large resource version: %d, current: %d" % (n, self.store.current_rv()),
                        {"causes": [{"reason": "ResourceVersionTooLarge",
                                     "message": "Too large resource version"}],
                         "retryAfterSeconds": 1})
            elif n == 0:
                limit = 0  # served from the watch cache: limit ignored
        if cont:
            crv, start = kstore.decode_continue(cont)
            at_rv = None if crv == -1 else crv
        try:
            rv, items = view.snapshot(ns, at_rv)
        except ValueError:
            if cont:
                tok = kstore.encode_continue(-1, start)
                raise kerrors.expired(
                    "The provided continue parameter is too old to display a "
                    "consistent list result. You can start a new list without "
                    "the continue parameter, or use the continue token in this "
                    "response to retrieve the remainder of the results. "
                    "Continuing with the provided token results in an "
                    "inconsistent list - objects that were created, modified, "
                    "or deleted between the time the first chunk was returned "
                    "and now may show up in the list.", {"continue": tok})
            raise kerrors.expired(
                "The resourceVersion for the provided list is too old.")
        out = []
        next_tok = None
        remaining = None
        last = ""
        for i, (k, o) in enumerate(items):
            if start and k < start:
                continue
            if limit and len(out) == limit:
                # like etcd paging: more keys exist, matching or not, so
                # there is a next page (possibly empty after filtering)
                next_tok = kstore.encode_continue(rv, last + "\x00")
                if not ls and not fs:
                    remaining = len(items) - i
                break
            last = k
            if not self._matches(o, ns, ls, fs):
                continue
            o.pop("kind", None)
            o.pop("apiVersion", None)
            out.append(o)
        meta = {"resourceVersion": str(rv)}
        if next_tok:
            meta["continue"] = next_tok
            if remaining:
                meta["remainingItemCount"] = remaining
        return {"kind": res.kind + "List", "apiVersion": kresources.api_version(res),
                "metadata": meta, "items": out}

    def _event(self, etype, res, o, as_table=False):
        if as_table and etype in ("ADDED", "MODIFIED", "DELETED"):
            return kerrors.go_json({"type": etype, "object": ktable.table(
                res, [o], {"resourceVersion": o["metadata"].get("resourceVersion", "")})})
        return kerrors.go_json(
            {"type": etype,
             "object": self.external(res, o) if o.get("kind") != "Status" else o})

    def watch(self, h, res, info, query):
        ns = (info.namespace or None) if res.namespaced else None
        ls, fs = self._selectors(res, query)
        if info.name:
            fs = fs + [("metadata.name", "=", info.name)]
        rv_param = _q(query, "resourceVersion")
        bookmarks = _q(query, "allowWatchBookmarks") in GO_TRUE
        initial = "true" if _q(query, "sendInitialEvents") in GO_TRUE else ""
        timeout_s = _q(query, "timeoutSeconds")
        timeout = 0.0
        if timeout_s:
            try:
                timeout = float(int(timeout_s))
            except ValueError:
                raise kerrors.bad_request('invalid value for "timeoutSeconds"')
        if timeout <= 0:
            # no (or a zero) timeout: the server picks one
            lo, hi = self.server.watch_timeout
            timeout = random.uniform(lo, hi)
        if initial == "true" and (not bookmarks or
                                  _q(query, "resourceVersionMatch") != "NotOlderThan"):
            raise kerrors.invalid("meta.k8s.io", "ListOptions", "", [
                kerrors.f_forbidden("sendInitialEvents",
                                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")])
        view = View(self.store, res)
        if rv_param:
            try:
                pos = int(rv_param)
            except ValueError:
                raise _invalid_rv(rv_param)
        else:
            pos = 0
        epoch = self.store.watch_epoch
        as_table = ktable.wants_table(h.headers.get("Accept"))
        h.start_stream()
        deadline = time.time() + timeout
        try:
            if pos == 0 or initial == "true":
                snap_rv, items = view.snapshot(ns)
                for _, o in items:
                    if self._matches(o, ns, ls, fs):
                        h.stream_chunk(self._event("ADDED", res, o, as_table))
                if initial == "true":
                    h.stream_chunk(self._event("BOOKMARK", res, {
                        "metadata": {"resourceVersion": str(snap_rv),
                                     "creationTimestamp": None,
                                     "annotations": {"k8s.io/initial-events-end": "true"}}}))
                pos = snap_rv
            next_bm = time.time() + self.server.bookmark_interval
            try:
                wid = self.store.watch_open(pos)
            except ValueError:
                st = kerrors.expired("too old resource version: %d (%d)" %
                                     (pos, self.store.compacted)).status()
                h.stream_chunk(self._event("ERROR", res, st))
                h.end_stream()
                return
            try:
                self._watch_loop(h, res, view, wid, pos, deadline, next_bm,
                                 bookmarks, ns, ls, fs, epoch, as_table)
            finally:
                self.store.watch_close(wid)
            h.end_stream()
        except (OSError, ValueError):
            h.close_connection = True

    def _watch_loop(self, h, res, view, wid, pos, deadline, next_bm,
                    bookmarks, ns, ls, fs, epoch, as_table=False):
        while True:
            now = time.time()
            if now >= deadline:
                return
            wait = deadline - now
            if bookmarks:
                wait = min(wait, max(0.0, next_bm - now))
            try:
                changes, cur = view.changes_since(pos, wait, wid, epoch)
            except EOFError:
                return
            for c in changes:
                ev = self._watch_event(c, ns, ls, fs)
                if ev:
                    self.server._watch_gate(c)
                    h.stream_chunk(self._event(ev[0], res, ev[1], as_table))
            # every change of this resource up to cur has been seen: the
            # watch now stands at cur (compaction cannot expire it, as with
            # the real watch cache) and bookmarks may say so
            pos = max(pos, cur)
            if bookmarks and time.time() >= next_bm:
                h.stream_chunk(self._event("BOOKMARK", res, {
                    "metadata": {"resourceVersion": str(pos),
                                 "creationTimestamp": None}}))
                next_bm = time.time() + self.server.bookmark_interval

    def _watch_event(self, c, ns, ls, fs):
        cur = self._matches(c.obj, ns, ls, fs) if c.type != "DELETED" else False
        old = self._matches(c.prev, ns, ls, fs) if c.prev is not None else False
        if c.type == "ADDED":
            return ("ADDED", c.obj) if cur else None
        if c.type == "DELETED":
            return ("DELETED", c.obj) if old else None
        if cur and old:
            return ("MODIFIED", c.obj)
        if cur:
            return ("ADDED", c.obj)
        if old:
            o = kstore.jcopy(c.prev)
            o["metadata"]["resourceVersion"] = str(c.rv)
            return ("DELETED", o)
        return None

    # -- writes --------------------------------------------------------------

    def _decode_body(self, res, body, query, ctype):
        mt = ctype.split(";")[0].strip()
        if mt == "application/vnd.kubernetes.protobuf":
            try:
                _, _, obj = kproto.decode(body)
            except (kproto.ProtoError, UnicodeDecodeError):
                raise _unsupported_body()
            _check_kind(res, obj)
            return obj
        if mt not in ("application/json", ""):
            raise _unsupported_body()
        obj = _decode(body)
        _check_kind(res, obj)
        return obj

    def _prune(self, res, obj, query):
        unknown = kschema.decode(res.group, res.kind, res.version, obj)
        fv = _q(query, "fieldValidation", "Warn")
        if unknown and fv == "Strict":
            raise kerrors.bad_request("strict decoding error: " + ", ".join(
                'unknown field "%s"' % u for u in unknown))
        if fv == "Ignore":
            return []
        return ['unknown field "%s"' % u for u in unknown]

    def _prepare_create(self, res, obj, ns, manager, old):
        md = obj.setdefault("metadata", {})
        if res.namespaced:
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
        if not md.get("name") and md.get("generateName"):
            md["name"] = md["generateName"] + "".join(
                random.choice(GEN_CHARS) for _ in range(5))
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = now_time()
        md.pop("deletionTimestamp", None)
        md.pop("deletionGracePeriodSeconds", None)
        md.pop("generation", None)
        md.pop("selfLink", None)
        obj["apiVersion"] = kresources.api_version(res)
        obj["kind"] = res.kind
        kvalidate.defaults(res, obj, None, self)
        md["managedFields"] = [_managed_entry(obj, manager, "Update",
                                              kresources.api_version(res), "",
                                              res.kind)]

    def create(self, res, ns, body, query, manager, ctype="", who=None):
        obj = self._decode_body(res, body, query, ctype)
        warn = self._prune(res, obj, query)
        md = obj.get("metadata")
        if not isinstance(md, dict):
            md = obj["metadata"] = {}
        if res.namespaced and md.get("namespace") and md["namespace"] != ns:
            raise kerrors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request")
        if res.namespaced and self.store.get(("", "namespaces"), "", ns) is None:
            raise kerrors.not_found("", "namespaces", ns)
        if md.get("resourceVersion"):
            raise kerrors.internal(
                "resourceVersion should not be set on objects to be created")
        if not md.get("name") and not md.get("generateName"):
            raise kerrors.invalid(res.group, res.kind, "", [
                kerrors.f_required("metadata.name", "name or generateName is required")])
        if res.group == "certificates.k8s.io":
            # who is None for objects the test harness seeds (create_object,
            # --seed): they keep the requester they name, like restored data
            kvalidate.csr_prepare_create(obj, who)
        if res.name == "nodes" and who is not None:
            _taint_not_ready(obj)
        held = None  # what a Service holds once the request is over
        try:
            self._prepare_create(res, obj, ns, manager, None)
            errs = kvalidate.validate(res, obj, None, "")
            if errs:
                raise kerrors.invalid(res.group, res.kind, md.get("name", ""), errs)
            if _q(query, "dryRun") == "All":
                md["resourceVersion"] = ""
                return 201, obj, warn
            out = View(self.store, res).create(obj)
            if out is None:
                raise kerrors.already_exists(res.group, res.name, md["name"])
            held = out
            return 201, out, warn
        finally:
            if res.name == "services":
                self._release_service((obj,), held)

    def _finish_update(self, res, sub, ns, name, new, old, manager, query,
                       expect_rv, warn, who=None):
        """Common tail of PUT and PATCH: strategies, validation, no-op, store."""
        md = new.setdefault("metadata", {})
        omd = old["metadata"]
        if md.get("name") != name:
            raise kerrors.bad_request(
                "the name of the object (%s) does not match the name on the URL (%s)"
                % (md.get("name"), name))
        if res.namespaced:
            if md.get("namespace") and md["namespace"] != ns:
                raise kerrors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request")
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
        if md.get("uid") and md["uid"] != omd.get("uid"):
            raise kerrors.conflict(
                res.group, res.name, name,
                "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                % (md["uid"], omd.get("uid")))
        # fields the server owns
        md["uid"] = omd.get("uid")
        md["creationTimestamp"] = omd.get("creationTimestamp")
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if k in omd:
                md[k] = omd[k]
            else:
                md.pop(k, None)
        if "generation" in omd:
            md["generation"] = omd["generation"]
        else:
            md.pop("generation", None)
        if not md.get("managedFields"):
            md["managedFields"] = omd.get("managedFields", [])
        new["apiVersion"] = kresources.api_version(res)
        new["kind"] = res.kind
        if res.group == "certificates.k8s.io":
            kvalidate.csr_prepare_update(new, old, sub, now_time())
        elif res.status_sub:
            if sub == "status":
                for k in list(new.keys()):
                    if k not in ("metadata", "status", "kind", "apiVersion"):
                        del new[k]
                for k, v in old.items():
                    if k not in ("metadata", "status", "kind", "apiVersion"):
                        new[k] = kstore.jcopy(v)
            else:
                if "status" in old:
                    new["status"] = kstore.jcopy(old["status"])
                else:
                    new.pop("status", None)
        held = old  # what a Service holds once the request is over
        try:
            kvalidate.defaults(res, new, old, self, sub)
            errs = kvalidate.validate(res, new, old, sub)
            if errs:
                raise kerrors.invalid(res.group, res.kind, name, errs)
            if res.group == "certificates.k8s.io":
                self._csr_admission(res, sub, name, new, old, who)
            if _canon(_strip_volatile(new)) == _canon(_strip_volatile(old)):
                return 200, old, warn
            mf = [e for e in md.get("managedFields") or []
                  if not (e.get("manager") == manager and
                          e.get("operation") == "Update" and
                          e.get("subresource", "") == sub)]
            mf.append(_managed_entry(new, manager, "Update",
                                     kresources.api_version(res), sub, res.kind))
            md["managedFields"] = mf
            if _q(query, "dryRun") == "All":
                return 200, new, warn
            # finalizers gone on an object being deleted: it goes away now
            if md.get("deletionTimestamp") and not md.get("finalizers"):
                _written(res, name, *View(self.store, res).delete(ns, name, expect_rv))
                held = None
                return 200, new, warn
            held = _written(res, name, *View(self.store, res).update(new, expect_rv))
            return 200, held, warn
        finally:
            if res.name == "services":
                self._release_service((old, new), held)

    def update(self, res, sub, ns, name, body, query, manager, ctype="", who=None):
        new = self._decode_body(res, body, query, ctype)
        warn = self._prune(res, new, query)
        if not isinstance(new.get("metadata"), dict):
            new["metadata"] = {}
        old = View(self.store, res).get(ns, name)
        rv = new["metadata"].get("resourceVersion", "")
        if old is None:
            if res.create_on_update and not sub:
                if new["metadata"].get("name") != name:
                    raise kerrors.bad_request(
                        "the name of the object (%s) does not match the name on the URL (%s)"
                        % (new["metadata"].get("name"), name))
                if rv:
                    raise kerrors.not_found(res.group, res.name, name)
                return self.create(res, ns, json.dumps(new).encode(), query,
                                   manager)
            raise kerrors.not_found(res.group, res.name, name)
        if not rv:
            if not res.unconditional_update:
                raise kerrors.invalid(res.group, res.kind, name, [
                    kerrors.f_invalid("metadata.resourceVersion",
                                      kerrors.GoRepr("0x0"),
                                      "must be specified for an update")])
            expect = old["metadata"]["resourceVersion"]
        else:
            if not re.match(r"^[0-9]+$", rv):
                raise _invalid_rv(rv)
            if rv != old["metadata"]["resourceVersion"]:
                raise kerrors.conflict(res.group, res.name, name, kerrors.MODIFIED)
            expect = rv
        return self._finish_update(res, sub, ns, name, new, old, manager,
                                   query, expect, warn, who)

    def patch(self, res, sub, ns, name, ctype, body, query, manager, who=None):
        mt = ctype.split(";")[0].strip().lower()
        if mt == "application/apply-patch+yaml" or mt not in PATCH_TYPES:
            raise kerrors.StatusError(
                415, "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted "
                "media types include: application/json-patch+json, "
                "application/merge-patch+json, application/strategic-merge-patch+json",
                {})
        try:
            p = json.loads(body.decode("utf-8")) if body else None
        except (ValueError, UnicodeDecodeError) as e:
            raise kerrors.bad_request("error decoding patch: %s" % e)
        old = View(self.store, res).get(ns, name)
        if old is None:
            raise kerrors.not_found(res.group, res.name, name)
        cur = self.external(res, old)
        try:
            if mt == "application/json-patch+json":
                new = kpatch.json_patch(cur, p)
            elif mt == "application/merge-patch+json":
                if not isinstance(p, dict):
                    raise kpatch.PatchError("json: cannot unmarshal into map", 400)
                new = kpatch.merge_patch(cur, p)
            else:
                new = kpatch.strategic_merge(cur, p, res.kind)
        except kpatch.PatchError as e:
            if e.code == 422:
                # kube-apiserver 1.37: no cause, whatever the patch's fault
                raise kerrors.StatusError(
                    422, "Invalid",
                    "the server rejected our request due to an error in our request", {})
            raise kerrors.bad_request(str(e))
        if not isinstance(new, dict):
            raise kerrors.bad_request("patched object is not a JSON object")
        if new.get("apiVersion") != cur["apiVersion"] or new.get("kind") != cur["kind"]:
            raise kerrors.bad_request(
                "the API version or kind of the patched object does not match")
        warn = self._prune(res, new, query)
        if not isinstance(new.get("metadata"), dict):
            new["metadata"] = {}
        rv = new["metadata"].get("resourceVersion", "")
        if rv and rv != old["metadata"]["resourceVersion"]:
            if not re.match(r"^[0-9]+$", str(rv)):
                raise _invalid_rv(rv)
            raise kerrors.conflict(res.group, res.name, name, kerrors.MODIFIED)
        return self._finish_update(res, sub, ns, name, new, old, manager, query,
                                   old["metadata"]["resourceVersion"], warn, who)

    def _csr_admission(self, res, sub, name, new, old, who):
        """The CertificateApproval and CertificateSigning admission plugins:
        writing /approval needs "approve", and changing the certificate
        through /status needs "sign", on the synthetic resource
        certificates.k8s.io "signers" named by the stored request's
        signerName or its "<domain>/*" (IsAuthorizedForSignerName)."""
        if sub == "approval":
            verb = "approve"
        elif sub == "status" and (new.get("status") or {}).get("certificate") != \
                (old.get("status") or {}).get("certificate"):
            verb = "sign"
        else:
            return
        user, groups, _ = who or ("", [], "")
        signer = (old.get("spec") or {}).get("signerName", "")
        for n in (signer, signer.split("/")[0] + "/*"):
            a = krbac.Attributes(user, groups, verb, "", True, res.group, "*",
                                 "signers", "", "", n)
            if self.server.authz.authorize(a)[0]:
                return
        raise kerrors.forbidden(res.group, res.name, name,
                                'user not permitted to %s requests with signerName "%s"'
                                % (verb, signer))

    def delete(self, res, ns, name, body, query):
        opts = {}
        if body:
            try:
                opts = json.loads(body)
            except ValueError:
                raise kerrors.bad_request("invalid DeleteOptions body")
            if not isinstance(opts, dict):
                raise kerrors.bad_request("invalid DeleteOptions body")
        view = View(self.store, res)
        old = view.get(ns, name)
        if old is None:
            raise kerrors.not_found(res.group, res.name, name)
        pre = opts.get("preconditions") or {}
        omd = old["metadata"]
        if pre.get("uid") and pre["uid"] != omd.get("uid"):
            raise kerrors.conflict(
                res.group, res.name, name,
                "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                % (pre["uid"], omd.get("uid")))
        if pre.get("resourceVersion") and pre["resourceVersion"] != omd["resourceVersion"]:
            raise kerrors.conflict(
                res.group, res.name, name,
                "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s"
                % (pre["resourceVersion"], omd["resourceVersion"]))
        dry = _q(query, "dryRun") == "All" or opts.get("dryRun") == ["All"]
        if omd.get("finalizers"):
            if omd.get("deletionTimestamp"):
                return 200, self.external(res, old)
            new = kstore.jcopy(old)
            new["metadata"]["deletionTimestamp"] = now_time()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if dry:
                return 200, self.external(res, new)
            st, out = view.update(new, omd["resourceVersion"])
            if st != "ok":
                raise kerrors.conflict(res.group, res.name, name, kerrors.MODIFIED)
            return 200, self.external(res, out)
        if dry:
            return 200, self.external(res, old)
        if res.name == "namespaces":
            self._delete_namespace_contents(name)
        st, out = view.delete(ns, name, omd["resourceVersion"])
        if st == "conflict":
            raise kerrors.conflict(res.group, res.name, name, kerrors.MODIFIED)
        if st == "notfound":
            raise kerrors.not_found(res.group, res.name, name)
        if res.name == "services":
            self._release_service((out,))
        if res.name in ("services", "namespaces"):
            return 200, self.external(res, out)
        d = {"name": name, "kind": res.name, "uid": omd.get("uid")}
        if res.group:
            d["group"] = res.group
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                     "status": "Success", "details": d}

    def _delete_namespace_contents(self, ns):
        for r in kresources.RESOURCES:
            if not r.namespaced or not r.storage:
                continue
            view = View(self.store, r)
            _, items = view.snapshot(ns)
            for _, o in items:
                view.delete(ns, o["metadata"]["name"])

    def delete_collection(self, res, ns, query):
        ls, fs = self._selectors(res, query)
        _, items = View(self.store, res).snapshot(ns)
        out = []
        for _, o in items:
            if self._matches(o, ns, ls, fs):
                try:
                    code, d = self.delete(res, o["metadata"].get("namespace", ""),
                                          o["metadata"]["name"], b"", query)
                    out.append(o)
                except kerrors.StatusError:
                    pass
        return {"kind": res.kind + "List", "apiVersion": kresources.api_version(res),
                "metadata": {"resourceVersion": str(self.store.current_rv())},
                "items": out}

    # -- allocation for services ---------------------------------------------

    # like the service REST's allocators: a free value at random, then the
    # first free one; a full range is the API server's 500 "range is full"
    @staticmethod
    def _allocate(used, pool, what):
        for _ in range(64):
            v = random.choice(pool)
            if v not in used:
                used.add(v)
                return v
        for v in pool:
            if v not in used:
                used.add(v)
                return v
        raise kerrors.internal("failed to allocate a %s: range is full" % what)

    def allocate_cluster_ip(self, family="IPv4"):
        """A free cluster IP of the dual-stack service CIDRs 10.96.0.0/16
        and fd00:10:96::/112 (kind's)."""
        return self._allocate(self._svc_ips, SERVICE_IPV6 if family == "IPv6"
                              else SERVICE_IPV4, "serviceIP")

    def allocate_node_port(self):
        """A free port of the default --service-node-port-range 30000-32767."""
        return self._allocate(self._node_ports, self.node_port_range, "nodePort")

    def claim_node_port(self, port):
        """Takes the node port a Service asks for; the allocator's error
        (None when taken)."""
        rng = self.node_port_range
        if port not in rng:
            return ("provided port is not in the valid range. The range of valid ports "
                    "is %d-%d" % (rng[0], rng[-1]))
        if port in self._node_ports:
            return "provided port is already allocated"
        self._node_ports.add(port)
        return None

    @staticmethod
    def _service_holds(svc):
        """The cluster IPs and node ports a stored Service holds."""
        spec = (svc or {}).get("spec") or {}
        ips = set(spec.get("clusterIPs") or [spec.get("clusterIP")])
        ports = {p.get("nodePort") for p in spec.get("ports") or []}
        ports.add(spec.get("healthCheckNodePort"))
        return ips, ports

    def _release_service(self, svcs, held=None):
        """Free what the versions svcs of a Service hold and held (the
        stored one once the request is over; None: the Service is gone)
        does not: a failed or dry-run write allocates nothing for good,
        an update frees what it dropped."""
        hips, hports = self._service_holds(held)
        for svc in svcs:
            ips, ports = self._service_holds(svc)
            self._svc_ips.difference_update(ips - hips)
            self._node_ports.difference_update(ports - hports)


def _written(res, name, st, out):
    """The stored object of a View write that answered st, or its error."""
    if st == "conflict":
        raise kerrors.conflict(res.group, res.name, name, kerrors.MODIFIED)
    if st == "notfound":
        raise kerrors.not_found(res.group, res.name, name)
    return out


def _warn_headers(warn):
    if not warn:
        return None
    return {"Warning": ['299 - "%s"' % w.replace('"', '\\"') for w in warn]}


def _decode(body):
    if not body:
        raise kerrors.bad_request("Object 'Kind' is missing in ''")
    try:
        obj = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise kerrors.bad_request("couldn't get version/kind; json parse error: %s" % e)
    if not isinstance(obj, dict):
        raise kerrors.bad_request(
            "couldn't get version/kind; json parse error: json: cannot unmarshal %s into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
            % type(obj).__name__)
    return obj


def _check_kind(res, obj):
    av = obj.get("apiVersion")
    kind = obj.get("kind")
    want = kresources.api_version(res)
    if av and av != want:
        raise kerrors.bad_request(
            "the API version in the data (%s) does not match the expected API version (%s)"
            % (av, want))
    if kind and kind != res.kind:
        raise kerrors.bad_request(
            "%s in version \"%s\" cannot be handled as a %s: no kind \"%s\" is registered for version \"%s\" in scheme"
            % (kind, res.version, res.kind, kind, want))
    obj["apiVersion"] = want
    obj["kind"] = res.kind


def _unsupported_body():
    return kerrors.StatusError(
        415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media "
        "types include: application/json", {})


def _invalid_rv(rv):
    return kerrors.StatusError(
        400, "BadRequest",
        'resourceVersion: Invalid value: "%s": strconv.ParseUint: parsing "%s": invalid syntax'
        % (rv, rv), None)


def _nf():
    return kerrors.StatusError(404, "NotFound",
                               "the server could not find the requested resource",
                               {})
