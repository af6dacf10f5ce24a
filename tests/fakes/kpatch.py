"""PATCH bodies: JSON merge patch, JSON patch and strategic merge patch.

Strategic merge follows k8s.io/apimachinery/pkg/util/strategicpatch for the
fields a cloud controller touches, with the per-field strategies of the real
Go types (see STRATEGIES); lists without a strategy are replaced whole.
"""

import copy
import json


class PatchError(Exception):
    """A patch that cannot apply.  code 422 (JSON patch apply) or 400."""

    def __init__(self, msg, code=422):
        Exception.__init__(self, msg)
        self.code = code


# ---------------------------------------------------------------- merge patch

def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# ----------------------------------------------------------------- JSON patch

def _unescape(tok):
    return tok.replace("~1", "/").replace("~0", "~")


def _split(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError('JSON pointer must be empty or start with a "/": %s' % path)
    return [_unescape(t) for t in path[1:].split("/")]


def _parent(doc, toks, path):
    cur = doc
    for t in toks[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError("doc is missing path: \"%s\": missing value" % path)
            cur = cur[t]
        elif isinstance(cur, list):
            i = _index(t, len(cur), path)
            cur = cur[i]
        else:
            raise PatchError("doc is missing path: \"%s\": missing value" % path)
    return cur


def _index(tok, n, path, allow_end=False):
    if tok == "-" and allow_end:
        return n
    try:
        if tok != "0" and (tok.startswith("0") or tok.startswith("-") or tok.startswith("+")):
            raise ValueError()
        i = int(tok)
    except ValueError:
        raise PatchError("Unable to access invalid index: %s: invalid index referenced" % tok)
    if i < 0 or i > n or (i == n and not allow_end):
        raise PatchError("Unable to access invalid index: %d: invalid index referenced" % i)
    return i


def _get(doc, path):
    toks = _split(path)
    if not toks:
        return doc
    par = _parent(doc, toks, path)
    t = toks[-1]
    if isinstance(par, dict):
        if t not in par:
            raise PatchError("missing value")
        return par[t]
    if isinstance(par, list):
        return par[_index(t, len(par), path)]
    raise PatchError("missing value")


def _add(doc, path, value):
    toks = _split(path)
    if not toks:
        return value
    par = _parent(doc, toks, path)
    t = toks[-1]
    if isinstance(par, dict):
        par[t] = value
    elif isinstance(par, list):
        par.insert(_index(t, len(par), path, allow_end=True), value)
    else:
        raise PatchError("add operation does not apply: doc is missing path: \"%s\": missing value" % path)
    return doc


def _remove(doc, path, op="remove"):
    toks = _split(path)
    if not toks:
        raise PatchError("%s operation does not apply: doc is missing path" % op)
    par = _parent(doc, toks, path)
    t = toks[-1]
    if isinstance(par, dict):
        if t not in par:
            raise PatchError("Unable to remove nonexistent key: %s: missing value" % t)
        return par.pop(t)
    if isinstance(par, list):
        i = _index(t, len(par), path)
        return par.pop(i)
    raise PatchError("%s operation does not apply: doc is missing path: \"%s\": missing value" % (op, path))


def _equal(a, b):
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def json_patch(doc, ops):
    """RFC 6902 applied to a copy of doc.  Raises PatchError (422)."""
    if not isinstance(ops, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch", 400)
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict):
            raise PatchError("json: cannot unmarshal into Go value of type jsonpatch.Operation", 400)
        kind = op.get("op")
        path = op.get("path")
        if not isinstance(path, str):
            raise PatchError("%s operation missing path" % kind if kind else
                             "Unexpected kind: unknown")
        if kind == "add":
            if "value" not in op:
                raise PatchError("add operation missing value")
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            if "value" not in op:
                raise PatchError("replace operation missing value")
            toks = _split(path)
            if not toks:
                doc = copy.deepcopy(op["value"])
                continue
            par = _parent(doc, toks, path)
            t = toks[-1]
            if isinstance(par, dict):
                if t not in par:
                    raise PatchError("replace operation does not apply: doc is missing key: %s: missing value" % path)
                par[t] = copy.deepcopy(op["value"])
            elif isinstance(par, list):
                par[_index(t, len(par), path)] = copy.deepcopy(op["value"])
            else:
                raise PatchError("replace operation does not apply: doc is missing path: %s: missing value" % path)
        elif kind in ("move", "copy"):
            frm = op.get("from")
            if not isinstance(frm, str):
                raise PatchError("%s operation missing from" % kind)
            try:
                v = _get(doc, frm)
            except PatchError:
                raise PatchError("%s operation does not apply: doc is missing from path: %s: missing value" % (kind, frm))
            if kind == "move":
                _remove(doc, frm, "move")
            doc = _add(doc, path, copy.deepcopy(v))
        elif kind == "test":
            try:
                v = _get(doc, path)
                ok = _equal(v, op.get("value"))
            except PatchError:
                ok = "value" in op and op["value"] is None
            if not ok:
                raise PatchError("testing value %s failed: test failed" % path)
        else:
            raise PatchError("Unexpected kind: %s" % kind)
    return doc


# ------------------------------------------------------ strategic merge patch

# (kind or "*", dotted path) -> (strategy, merge key); list elements add no
# path component.  Everything else is "replace".
STRATEGIES = {
    ("*", "metadata.finalizers"): ("merge", None),
    ("*", "metadata.ownerReferences"): ("merge", "uid"),
    ("Node", "spec.podCIDRs"): ("merge", None),
    ("Node", "status.addresses"): ("merge", "type"),
    ("Node", "status.conditions"): ("merge", "type"),
    ("Node", "status.images"): ("replace", None),
    ("Node", "status.volumesAttached"): ("replace", None),
    ("Service", "spec.ports"): ("merge", "port"),
    ("Service", "status.conditions"): ("merge", "type"),
    ("Service", "status.loadBalancer.ingress"): ("replace", None),
    ("Namespace", "status.conditions"): ("merge", "type"),
    ("Endpoints", "subsets"): ("replace", None),
}

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ORDER = "$setElementOrder/"


def _strategy(kind, path):
    return STRATEGIES.get((kind, path)) or STRATEGIES.get(("*", path)) or \
        ("replace", None)


def _key_of(item, key):
    if key is None:
        return json.dumps(item, sort_keys=True)
    if isinstance(item, dict):
        return json.dumps(item.get(key), sort_keys=True)
    return None


def _strip_directives(v):
    if isinstance(v, dict):
        return {k: _strip_directives(x) for k, x in v.items()
                if k != DIRECTIVE and k != RETAIN_KEYS and
                not k.startswith(DELETE_PRIMITIVE) and not k.startswith(SET_ORDER)
                and x is not None}
    if isinstance(v, list):
        return [_strip_directives(x) for x in v]
    return v


def strategic_merge(original, patch, kind):
    """Apply a strategic merge patch to original (not modified)."""
    if not isinstance(patch, dict):
        raise PatchError("unable to find api field in struct for the patch", 400)
    return _merge_map(copy.deepcopy(original) if isinstance(original, dict)
                      else {}, patch, kind, "")


def _join(path, k):
    return k if not path else path + "." + k


def _merge_map(orig, patch, kind, path):
    d = patch.get(DIRECTIVE)
    if d == "replace":
        return _strip_directives({k: v for k, v in patch.items() if k != DIRECTIVE})
    if d == "delete":
        return {}
    if d is not None:
        raise PatchError("Unknown patch type: %s in map: %s" % (d, patch), 400)
    out = dict(orig)
    orders = {}
    for k, v in patch.items():
        if k in (DIRECTIVE, RETAIN_KEYS):
            continue
        if k.startswith(SET_ORDER):
            orders[k[len(SET_ORDER):]] = v
            continue
        if k.startswith(DELETE_PRIMITIVE):
            field = k[len(DELETE_PRIMITIVE):]
            cur = out.get(field)
            if isinstance(cur, list) and isinstance(v, list):
                out[field] = [x for x in cur if x not in v]
            continue
        if v is None:
            out.pop(k, None)
            continue
        sub = _join(path, k)
        o = out.get(k)
        if k not in out or type(o) is not type(v):
            # not in the original (or of another type): take the patch value
            out[k] = _strip_directives(v)
            continue
        if isinstance(v, dict):
            o = out.get(k)
            out[k] = _merge_map(o if isinstance(o, dict) else {}, v, kind, sub)
        elif isinstance(v, list):
            strat, mkey = _strategy(kind, sub)
            o = out.get(k)
            if strat == "merge" and isinstance(o, list):
                out[k] = _merge_list(o, v, mkey, kind, sub, orders.get(k))
            else:
                out[k] = _replace_list(v)
        else:
            out[k] = v
    for k, order in orders.items():
        if k in patch or k not in out or not isinstance(out[k], list):
            continue
        strat, mkey = _strategy(kind, _join(path, k))
        if strat == "merge":
            out[k] = _order(out[k], order, out[k], mkey)
    rk = patch.get(RETAIN_KEYS)
    if isinstance(rk, list):
        out = {k: v for k, v in out.items() if k in rk}
    return out


def _replace_list(v):
    items = [x for x in v if not (isinstance(x, dict) and
                                  x.get(DIRECTIVE) in ("replace", "delete")
                                  and len(x) == 1)]
    return _strip_directives(items)


def _merge_list(orig, patch, mkey, kind, path, order):
    if mkey is None:
        if any(isinstance(x, dict) for x in patch):
            return _replace_list(patch)
        merged = list(orig)
        for x in patch:
            if x not in merged:
                merged.append(x)
        return _order(merged, order if order is not None else patch, orig, None)
    # special elements first ($patch: replace / delete)
    orig = list(orig)
    plain = []
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError("unable to merge list %s: elements must be maps" % path, 400)
        d = item.get(DIRECTIVE)
        if d == "replace":
            return _strip_directives([x for x in patch if x is not item])
        if d == "delete":
            if mkey not in item:
                raise PatchError("map: %s does not contain declared merge key: %s" % (item, mkey), 400)
            orig = [x for x in orig if not (isinstance(x, dict) and
                                            x.get(mkey) == item[mkey])]
            continue
        if d is not None:
            raise PatchError("Unknown patch type: %s in map: %s" % (d, item), 400)
        if mkey not in item:
            raise PatchError("map: %s does not contain declared merge key: %s" % (item, mkey), 400)
        plain.append(item)
    server_order = list(orig)
    merged = orig
    for item in plain:
        # mergeSliceWithoutSpecialElements: the first element with an equal
        # key absorbs the patch element, elements appended earlier included
        for i, x in enumerate(merged):
            if isinstance(x, dict) and x.get(mkey) == item[mkey]:
                merged[i] = _merge_map(x, item, kind, path)
                break
        else:
            merged.append(_merge_map({}, item, kind, path))
    return _order(merged, order if order is not None else plain, server_order,
                  mkey)


def _order(merged, patch_order, server_order, mkey):
    """normalizeElementOrder: patch items in patch order, server-only items
    in server order, interleaved by their server positions."""
    pkeys = [_key_of(x, mkey) for x in patch_order]
    skeys = [_key_of(x, mkey) for x in server_order]
    in_patch = [x for x in merged if _key_of(x, mkey) in pkeys]
    server_only = [x for x in merged if _key_of(x, mkey) not in pkeys]

    def pidx(x):
        k = _key_of(x, mkey)
        return pkeys.index(k) if k in pkeys else len(pkeys)

    def sidx(x):
        k = _key_of(x, mkey)
        return skeys.index(k) if k in skeys else -1

    in_patch.sort(key=pidx)
    server_only.sort(key=lambda x: (sidx(x) < 0, sidx(x)))
    out = []
    i = j = 0
    while i < len(server_only) or j < len(in_patch):
        if i >= len(server_only):
            out.append(in_patch[j])
            j += 1
        elif j >= len(in_patch):
            out.append(server_only[i])
            i += 1
        else:
            li, ri = sidx(server_only[i]), sidx(in_patch[j])
            if li >= 0 and ri >= 0 and li < ri:
                out.append(server_only[i])
                i += 1
            else:
                out.append(in_patch[j])
                j += 1
    return out
