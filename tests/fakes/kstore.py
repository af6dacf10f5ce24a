"""Object storage with etcd-like resourceVersions, watch history and paging.

One global revision counter for all objects.  Every change is kept in a history
list (rv, type, key, object, previous object) until compact() drops it; watches
and consistent list pages are served from that history.  Stored objects are
never mutated in place: callers get deep copies (jcopy), except the readers
that promise not to mutate what they get (get and snapshot with copied=False:
the RBAC authorizer, on every request).
"""

import base64
import bisect
import copy
import json
import threading

import kerrors


def jcopy(o):
    """A deep copy of a JSON value (dict, list, str, number, bool, None), a
    few times faster than copy.deepcopy, which the fake spent most of its
    time in; anything else goes to copy.deepcopy."""
    t = type(o)
    if t is dict:
        return {k: jcopy(v) for k, v in o.items()}
    if t is list:
        return [jcopy(v) for v in o]
    if t in (str, int, float, bool) or o is None:
        return o
    return copy.deepcopy(o)


def _key(obj):
    md = obj.get("metadata", {})
    return md.get("namespace", ""), md.get("name", "")


def sort_key(ns, name):
    # etcd keys: /registry/<resource>/<ns>/<name> or /registry/<resource>/<name>
    return "%s/%s" % (ns, name) if ns else name


class Change(object):
    __slots__ = ("rv", "type", "rkey", "ns", "name", "obj", "prev")

    def __init__(self, rv, etype, rkey, ns, name, obj, prev):
        self.rv = rv
        self.type = etype
        self.rkey = rkey
        self.ns = ns
        self.name = name
        self.obj = obj
        self.prev = prev


class Store(object):
    """Objects by (rkey, namespace, name); rkey is (group, resource)."""

    def __init__(self, first_rv=1000):
        self.cond = threading.Condition()
        self.rv = first_rv
        self.objects = {}          # rkey -> {(ns, name): obj}
        self.history = []          # [Change], rv ascending
        self.history_rvs = []      # rv of each Change, for bisect
        self.compacted = 0         # changes with rv <= compacted are gone
        self.closed = False
        self.watchers = {}         # watch id -> rv it has seen up to
        self._next_watch = 0
        self.watch_epoch = 0       # end_watches() bumps it

    # -- reads -------------------------------------------------------------

    def current_rv(self):
        with self.cond:
            return self.rv

    def get(self, rkey, ns, name, copied=True):
        """A copy of the object (copied=False: the stored one itself, for a
        reader that never mutates it), or None."""
        with self.cond:
            o = self.objects.get(rkey, {}).get((ns, name))
            return jcopy(o) if o is not None and copied else o

    def changed_since(self, rkey, name, since_rv):
        """Whether an object called name (any namespace) of rkey changed
        after since_rv, as far as the kept history tells."""
        with self.cond:
            i = bisect.bisect_right(self.history_rvs, since_rv)
            return any(c.rkey == rkey and c.name == name for c in self.history[i:])

    def snapshot(self, rkey, ns=None, at_rv=None, copied=True):
        """Objects of rkey (in ns, or all) as of at_rv (None = now).

        Returns (rv, [obj...]) sorted by etcd key, copies unless copied is
        False.  Raises ValueError when at_rv is older than the compacted
        history.
        """
        with self.cond:
            cur = dict(self.objects.get(rkey, {}))
            rv = self.rv
            if at_rv is not None and at_rv < rv:
                if at_rv < self.compacted:
                    raise ValueError("compacted")
                i = bisect.bisect_right(self.history_rvs, at_rv)
                for ch in reversed(self.history[i:]):
                    if ch.rkey != rkey:
                        continue
                    k = (ch.ns, ch.name)
                    if ch.type == "ADDED":
                        cur.pop(k, None)
                    else:
                        cur[k] = ch.prev
                rv = at_rv
            items = [(sort_key(k[0], k[1]), o) for k, o in cur.items()
                     if ns is None or k[0] == ns]
        items.sort(key=lambda t: t[0])
        if not copied:
            return rv, items
        return rv, [(k, jcopy(o)) for k, o in items]

    # -- writes ------------------------------------------------------------

    def _commit(self, etype, rkey, ns, name, obj, prev):
        self.rv += 1
        rv = self.rv
        if obj is not None:
            obj["metadata"]["resourceVersion"] = str(rv)
        ch = Change(rv, etype, rkey, ns, name, obj, prev)
        self.history.append(ch)
        self.history_rvs.append(rv)
        self.cond.notify_all()
        return rv

    def create(self, rkey, obj):
        """Store a new object; returns a copy with resourceVersion set, or
        None if the key exists."""
        ns, name = _key(obj)
        with self.cond:
            bucket = self.objects.setdefault(rkey, {})
            if (ns, name) in bucket:
                return None
            obj = jcopy(obj)
            self._commit("ADDED", rkey, ns, name, obj, None)
            bucket[(ns, name)] = obj
            return jcopy(obj)

    def update(self, rkey, obj, expect_rv=None):
        """Replace an object.  expect_rv: the stored rv must equal it.

        Returns ("ok", copy) / ("notfound", None) / ("conflict", current)."""
        ns, name = _key(obj)
        with self.cond:
            bucket = self.objects.setdefault(rkey, {})
            prev = bucket.get((ns, name))
            if prev is None:
                return "notfound", None
            if expect_rv is not None and \
                    prev["metadata"]["resourceVersion"] != str(expect_rv):
                return "conflict", jcopy(prev)
            obj = jcopy(obj)
            self._commit("MODIFIED", rkey, ns, name, obj, prev)
            bucket[(ns, name)] = obj
            return "ok", jcopy(obj)

    def delete(self, rkey, ns, name, expect_rv=None):
        """Remove an object; the DELETED event carries it with a new rv.

        Returns ("ok", deleted copy) / ("notfound", None) / ("conflict", cur)."""
        with self.cond:
            bucket = self.objects.setdefault(rkey, {})
            prev = bucket.get((ns, name))
            if prev is None:
                return "notfound", None
            if expect_rv is not None and \
                    prev["metadata"]["resourceVersion"] != str(expect_rv):
                return "conflict", jcopy(prev)
            obj = jcopy(prev)
            self._commit("DELETED", rkey, ns, name, obj, prev)
            del bucket[(ns, name)]
            return "ok", jcopy(obj)

    def compact(self, rv=None):
        """Forget history up to rv (default: everything).  Returns the
        compaction revision."""
        with self.cond:
            if rv is None or rv > self.rv:
                rv = self.rv
            if rv <= self.compacted:
                return self.compacted
            self.compacted = rv
            self._trim()
            self.cond.notify_all()
            return rv

    def _trim(self):
        # established watches keep what they still have to see, as the real
        # watch cache delivers to them whatever etcd compacts meanwhile
        keep = min([self.compacted] + list(self.watchers.values()))
        i = bisect.bisect_right(self.history_rvs, keep)
        if i:
            del self.history[:i]
            del self.history_rvs[:i]

    def end_watches(self):
        with self.cond:
            self.watch_epoch += 1
            self.cond.notify_all()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    # -- watch -------------------------------------------------------------

    def watch_open(self, since_rv):
        """Register a watch that has seen everything up to since_rv; returns
        its id.  Raises ValueError("compacted") when since_rv is too old."""
        with self.cond:
            if since_rv < self.compacted:
                raise ValueError("compacted")
            self._next_watch += 1
            self.watchers[self._next_watch] = since_rv
            return self._next_watch

    def watch_close(self, wid):
        with self.cond:
            self.watchers.pop(wid, None)
            self._trim()

    def changes_since(self, rkey, since_rv, timeout, wid=None, epoch=None):
        """Wait up to timeout for changes of rkey after since_rv.

        wid: an id from watch_open (the watch then stands at the returned
        rv).  Returns (list of Change, current rv).  Raises
        ValueError("compacted") when since_rv is older than the kept history,
        EOFError when closed or when end_watches() ran since epoch.
        """
        with self.cond:
            while True:
                if self.closed or (epoch is not None and
                                   epoch != self.watch_epoch):
                    raise EOFError()
                if wid is None and since_rv < self.compacted:
                    raise ValueError("compacted")
                i = bisect.bisect_right(self.history_rvs, since_rv)
                out = [c for c in self.history[i:] if c.rkey == rkey]
                if out or timeout <= 0:
                    if wid is not None and wid in self.watchers:
                        self.watchers[wid] = self.rv
                    return out, self.rv
                self.cond.wait(timeout)
                timeout = 0


def encode_continue(rv, start_key):
    tok = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start_key},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(tok.encode()).decode().rstrip("=")


def decode_continue(tok):
    try:
        pad = "=" * (-len(tok) % 4)
        d = json.loads(base64.urlsafe_b64decode(tok + pad).decode())
        if d.get("v") != "meta.k8s.io/v1":
            raise ValueError()
        return int(d["rv"]), str(d["start"])
    except Exception:
        raise kerrors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
