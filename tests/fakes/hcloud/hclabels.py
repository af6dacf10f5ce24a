"""Hetzner Cloud labels: validation and the label-selector language.

Selector grammar (the official API description, "Label Selector"):

    k==v / k=v          value of k equals v
    k!=v                value of k differs from v (or k is absent)
    k                   k is present
    !k                  k is absent
    k in (v1,v2)        value of k is one of the values
    k notin (v1,v2)     value of k is none of the values (or k is absent)
    e1,e2               every expression holds

parse() raises ValueError on a malformed selector; Selector.matches(labels)
tests one label map.
"""

import re

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_SET_OP = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")


def key_error(key):
    """Why key is not a valid label key, or None."""
    if not isinstance(key, str) or not key:
        return "label key must not be empty"
    prefix, _, name = key.rpartition("/")
    if "/" in key:
        if not prefix or len(prefix) > 253 or \
                not all(_DNS_LABEL.match(p) for p in prefix.split(".")):
            return "label key prefix %r is not a DNS subdomain" % prefix
        if prefix == "hetzner.cloud" or prefix.endswith(".hetzner.cloud"):
            return "label key prefix hetzner.cloud/ is reserved"
    if not _NAME.match(name):
        return "label key name %r is invalid" % name
    return None


def value_error(value):
    """Why value is not a valid label value, or None."""
    if not isinstance(value, str):
        return "label value must be a string"
    if not _VALUE.match(value):
        return "label value %r is invalid" % value
    return None


def labels_error(labels):
    """Why a label map is invalid, or None."""
    if not isinstance(labels, dict):
        return "labels must be an object"
    for k, v in labels.items():
        e = key_error(k) or value_error(v)
        if e:
            return e
    return None


def _split_top(s):
    """Split on commas outside parentheses."""
    out, depth, cur = [], 0, []
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced ')'")
        if c == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if depth != 0:
        raise ValueError("unbalanced '('")
    out.append("".join(cur))
    return out


class Selector(object):
    def __init__(self, reqs, text):
        self.reqs = reqs  # [(op, key, values)]
        self.text = text

    def matches(self, labels):
        for op, key, vals in self.reqs:
            present = key in labels
            v = labels.get(key)
            if op == "eq" and not (present and v == vals[0]):
                return False
            if op == "ne" and present and v == vals[0]:
                return False
            if op == "exists" and not present:
                return False
            if op == "absent" and present:
                return False
            if op == "in" and not (present and v in vals):
                return False
            if op == "notin" and present and v in vals:
                return False
        return True


def parse(text):
    """Parse a selector; an empty one matches everything."""
    reqs = []
    if text is None or text.strip() == "":
        return Selector(reqs, text or "")
    for part in _split_top(text):
        p = part.strip()
        if not p:
            raise ValueError("empty expression")
        m = _SET_OP.match(p)
        if m:
            key, op, inner = m.group(1), m.group(2), m.group(3)
            vals = [x.strip() for x in inner.split(",")]
            if key_error(key) or any(value_error(x) for x in vals):
                raise ValueError("invalid expression %r" % p)
            reqs.append((op, key, vals))
            continue
        for sym, op in (("!=", "ne"), ("==", "eq"), ("=", "eq")):
            if sym in p:
                key, _, val = p.partition(sym)
                key, val = key.strip(), val.strip()
                if key_error(key) or value_error(val) or "=" in val:
                    raise ValueError("invalid expression %r" % p)
                reqs.append((op, key, [val]))
                break
        else:
            if p.startswith("!"):
                key = p[1:].strip()
                op = "absent"
            else:
                key = p
                op = "exists"
            if key_error(key):
                raise ValueError("invalid expression %r" % p)
            reqs.append((op, key, []))
    return Selector(reqs, text)
