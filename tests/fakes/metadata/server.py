#!/usr/bin/python3
"""Fake instance metadata service: one HTTP server speaking one of the EC2
IMDSv2, GCE, Azure IMDS, OpenStack, DigitalOcean or Hetzner dialects, with
fault injection and a request log, for tests of the metadata layer.

Wire behaviour follows the project's metadata-services reference; README.md
next to this file says which fact each behaviour implements.  Standard library
only, so it runs with the system interpreter.

Python:  FakeMetadata(dialect, identity=None, port=0).start() ... .stop()
CLI:     server.py --dialect ec2 [--identity FILE] [--port N] [--port-file F]
"""

import argparse
import base64
import copy
import fnmatch
import hashlib
import http.server
import json
import os
import re
import secrets
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
IDENTITY_DIR = os.path.join(HERE, "identities")
DIALECTS = ("ec2", "gce", "azure", "openstack", "digitalocean", "hetzner")

# Request headers worth keeping in the request log (lower case).
LOGGED_HEADERS = (
    "host", "user-agent", "accept", "connection",
    "x-aws-ec2-metadata-token", "x-aws-ec2-metadata-token-ttl-seconds",
    "x-forwarded-for", "metadata-flavor", "metadata",
    "x-ms-client-request-id",
)

DEFAULT_MALFORMED_BODY = b'{"malformed": \x00\xff<not json'


# ---------------------------------------------------------------------------
# Identity
# ---------------------------------------------------------------------------

def default_identity(dialect):
    """Return the shipped default identity for a dialect (a fresh dict)."""
    _check_dialect(dialect)
    with open(os.path.join(IDENTITY_DIR, dialect + ".json"), encoding="utf-8") as f:
        return json.load(f)


def load_identity(dialect, identity=None):
    """Merge identity (dict, path to a JSON file, or None) over the dialect's
    default identity.  Keys given replace the default's; null removes a fact."""
    ident = default_identity(dialect)
    if identity is None:
        return ident
    if isinstance(identity, (str, os.PathLike)):
        with open(identity, encoding="utf-8") as f:
            identity = json.load(f)
    if not isinstance(identity, dict):
        raise TypeError("identity must be a dict, a JSON file path or None")
    ident.update(copy.deepcopy(identity))
    return ident


def _check_dialect(dialect):
    if dialect not in DIALECTS:
        raise ValueError("unknown dialect %r (one of %s)" % (dialect, ", ".join(DIALECTS)))


def _s(v):
    """Identity value as wire text; None stays None."""
    return None if v is None else str(v)


# ---------------------------------------------------------------------------
# Minimal YAML emitter (Hetzner answers are YAML; no PyYAML in the fake)
# ---------------------------------------------------------------------------

# Plain scalars that a YAML 1.1 loader would turn into something other than a
# string (PyYAML's implicit resolvers); those get quoted, as PyYAML would.
_YAML_NONSTR = re.compile(r"""^(?:
    ~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO
   |on|On|ON|off|Off|OFF|y|Y|n|N|=|<<
   |[-+]?(?:0|[1-9][0-9_]*)|[-+]?0[0-7_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+
   |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
   |[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?
   |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
   |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
)$""", re.X)
_YAML_PLAIN = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+:@=()-]*(?: [A-Za-z0-9_./+:@=()-]+)*$")


def _yaml_str(s):
    if s == "":
        return "''"
    if _YAML_NONSTR.match(s) or not _YAML_PLAIN.match(s) or s.endswith(":") or ": " in s:
        return json.dumps(s)
    return s


def _yaml_inline(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_yaml_inline(i) for i in v) + "]"
    if isinstance(v, dict):
        if v:
            raise ValueError("non-empty mapping in flow context")
        return "{}"
    return _yaml_str(str(v))


def _is_block(v):
    return (isinstance(v, dict) and v) or (
        isinstance(v, list) and any(isinstance(i, (dict, list)) and i for i in v))


def _yaml_lines(obj, indent):
    pad = " " * indent
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = _yaml_str(str(k))
            if isinstance(v, dict) and v:
                out.append("%s%s:" % (pad, key))
                out += _yaml_lines(v, indent + 2)
            elif _is_block(v):
                out.append("%s%s:" % (pad, key))
                out += _yaml_lines(v, indent)
            else:
                out.append("%s%s: %s" % (pad, key, _yaml_inline(v)))
    elif isinstance(obj, list):
        for item in obj:
            if _is_block(item):
                sub = _yaml_lines(item, indent + 2)
                sub[0] = pad + "- " + sub[0][indent + 2:]
                out += sub
            else:
                out.append("%s- %s" % (pad, _yaml_inline(item)))
    else:
        out.append(pad + _yaml_inline(obj))
    return out


def yaml_dump(obj):
    """Block-style YAML text for dicts/lists of scalars; scalar lists inline."""
    if not _is_block(obj):
        return _yaml_inline(obj) + "\n"
    return "\n".join(_yaml_lines(obj, 0)) + "\n"


# ---------------------------------------------------------------------------
# HTTP plumbing shared by the dialects
# ---------------------------------------------------------------------------

class Request:
    """One parsed request, as the dialects see it."""

    def __init__(self, method, target, headers, body):
        self.method = method
        self.target = target
        split = urllib.parse.urlsplit(target)
        self.path = split.path or "/"
        self.query_string = split.query
        self.query = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
        self.headers = headers
        self.body = body

    def arg(self, name, default=None):
        for k, v in self.query:
            if k == name:
                return v
        return default

    def header(self, name):
        return self.headers.get(name)


class Response:
    def __init__(self, status, body=b"", content_type=None, headers=None):
        self.status = status
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.headers = list(headers or [])
        if content_type:
            self.headers.append(("Content-Type", content_type))


def _html_error(status, reason):
    return ("<?xml version=\"1.0\" encoding=\"iso-8859-1\"?>\n"
            "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Transitional//EN\"\n"
            "\t\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n"
            "<html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" lang=\"en\">\n"
            " <head>\n  <title>%d - %s</title>\n </head>\n"
            " <body>\n  <h1>%d - %s</h1>\n </body>\n</html>\n" % (status, reason, status, reason))


def _reason(status):
    return http.server.BaseHTTPRequestHandler.responses.get(status, ("Error",))[0]


def _compact(obj):
    return json.dumps(obj, separators=(",", ":"))


def _listing(entries, terminated=True):
    """Directory listing: one entry a line, LF-terminated (or LF-joined)."""
    if terminated:
        return "".join(e + "\n" for e in entries)
    return "\n".join(entries)


class Dialect:
    name = ""
    server_header = "fake-metadata"

    def __init__(self, fake):
        self.fake = fake

    def handle(self, req):
        raise NotImplementedError

    def error(self, status, message=None):
        return Response(status, (message or _reason(status)) + "\n", "text/plain; charset=utf-8")

    def ident(self):
        return self.fake.identity_snapshot()


# ---------------------------------------------------------------------------
# EC2 IMDSv2 (and the EC2-compatible tree Nova serves)
# ---------------------------------------------------------------------------

# Dated versions the fake answers; 2009-04-04 is the oldest one served.
EC2_VERSIONS = (
    "2009-04-04", "2011-01-01", "2011-05-01", "2012-01-12", "2014-02-25",
    "2014-11-05", "2015-10-20", "2016-04-19", "2016-06-30", "2016-09-02",
    "2018-03-28", "2018-08-17", "2018-09-24", "2019-10-01", "2020-10-27",
    "2021-01-03", "2021-03-23", "2021-07-15", "2022-09-24", "2024-04-11",
)
# Categories newer than the oldest version; absent (404) under older versions.
EC2_CATEGORY_SINCE = {
    ("placement", "region"): "2020-08-24",
    ("ipv6",): "2021-01-03",
}
EC2_TOKEN_TTL_MAX_S = 21600
EC2_TOKEN_PATH = "/latest/api/token"
NOVA_EC2_VERSIONS = ("1.0", "2007-01-19", "2007-03-01", "2007-08-29", "2007-10-10",
                     "2007-12-15", "2008-02-01", "2008-09-01", "2009-04-04")


def _ec2_interfaces(ident):
    """All NICs of an EC2 identity, primary (device 0) first."""
    primary = {
        "mac": ident.get("mac"),
        "device_number": 0,
        "interface_id": ident.get("interface_id"),
        "private_ipv4s": ([ident["private_ipv4"]] if ident.get("private_ipv4") else [])
        + list(ident.get("secondary_private_ipv4s") or []),
        "public_ipv4s": [ident["public_ipv4"]] if ident.get("public_ipv4") else [],
        "ipv6s": [ident["ipv6"]] if ident.get("ipv6") else [],
        "subnet_id": ident.get("subnet_id"),
        "subnet_cidr": ident.get("subnet_cidr"),
        "local_hostname": ident.get("hostname"),
        "public_hostname": ident.get("public_hostname"),
    }
    nics = [primary]
    for extra in ident.get("extra_interfaces") or []:
        nic = {"private_ipv4s": [], "public_ipv4s": [], "ipv6s": [],
               "subnet_id": ident.get("subnet_id"), "subnet_cidr": ident.get("subnet_cidr")}
        nic.update(extra)
        nics.append(nic)
    return nics


def ec2_meta_data_tree(ident):
    """EC2 meta-data as nested dicts; leaves are str or list of str."""
    nics = _ec2_interfaces(ident)
    macs = {}
    for nic in nics:
        d = {
            "device-number": str(nic.get("device_number", 0)),
            "interface-id": _s(nic.get("interface_id")),
            "local-hostname": _s(nic.get("local_hostname")),
            "mac": nic["mac"],
            "owner-id": _s(ident.get("account_id")),
            "security-group-ids": list(ident.get("security_group_ids") or []),
            "security-groups": list(ident.get("security_groups") or []),
            "subnet-id": _s(nic.get("subnet_id")),
            "subnet-ipv4-cidr-block": _s(nic.get("subnet_cidr")),
            "vpc-id": _s(ident.get("vpc_id")),
            "vpc-ipv4-cidr-block": _s(ident.get("vpc_cidr")),
            "vpc-ipv4-cidr-blocks": [ident["vpc_cidr"]] if ident.get("vpc_cidr") else None,
        }
        if nic.get("private_ipv4s"):
            d["local-ipv4s"] = list(nic["private_ipv4s"])
        if nic.get("public_ipv4s"):
            d["public-ipv4s"] = list(nic["public_ipv4s"])
            if nic.get("public_hostname"):
                d["public-hostname"] = nic["public_hostname"]
        if nic.get("ipv6s"):
            d["ipv6s"] = list(nic["ipv6s"])
        macs[nic["mac"]] = {k: v for k, v in d.items() if v is not None}

    md = {
        "ami-id": _s(ident.get("image_id")),
        "ami-launch-index": "0",
        "ami-manifest-path": "(unknown)",
        "block-device-mapping": {"ami": "/dev/xvda", "root": "/dev/xvda"},
        "hostname": _s(ident.get("hostname")),
        "instance-action": "none",
        "instance-id": _s(ident.get("instance_id")),
        "instance-life-cycle": "on-demand",
        "instance-type": _s(ident.get("instance_type")),
        "local-hostname": _s(ident.get("hostname")),
        "mac": _s(ident.get("mac")),
        "network": {"interfaces": {"macs": macs}},
        "placement": {
            "availability-zone": _s(ident.get("zone")),
            "availability-zone-id": _s(ident.get("zone_id")),
            "region": _s(ident.get("region")),
        },
        "profile": "default-hvm",
        "reservation-id": "r-0" + _digest(ident.get("instance_id"))[:16],
        "security-groups": list(ident.get("security_groups") or []),
        "services": {"domain": "amazonaws.com", "partition": "aws"},
    }
    if ident.get("private_ipv4"):
        md["local-ipv4"] = ident["private_ipv4"]
    if ident.get("public_ipv4"):
        md["public-ipv4"] = ident["public_ipv4"]
        if ident.get("public_hostname"):
            md["public-hostname"] = ident["public_hostname"]
    if ident.get("ipv6"):
        md["ipv6"] = ident["ipv6"]
    keys = ident.get("public_keys") or {}
    if keys:
        md["public-keys"] = _Ec2PublicKeys(
            (str(i), (name, {"openssh-key": key})) for i, (name, key) in enumerate(keys.items()))
    return _prune(md)


class _Ec2PublicKeys(dict):
    """public-keys/ lists `<index>=<name>` but is walked by index."""

    def __init__(self, items):
        super().__init__()
        self.names = {}
        for idx, (name, sub) in items:
            self[idx] = sub
            self.names[idx] = name


def _digest(v):
    return hashlib.sha1(str(v).encode()).hexdigest()


def _prune(d):
    """Drop None-valued keys (facts the instance does not have) recursively."""
    if isinstance(d, _Ec2PublicKeys):
        out = _Ec2PublicKeys(())
        out.names = dict(d.names)
    elif isinstance(d, dict):
        out = {}
    else:
        return d
    for k, v in d.items():
        if v is not None:
            out[k] = _prune(v)
    return out


def ec2_identity_document(ident):
    doc = {
        "accountId": _s(ident.get("account_id")),
        "architecture": ident.get("architecture") or "x86_64",
        "availabilityZone": _s(ident.get("zone")),
        "billingProducts": None,
        "devpayProductCodes": None,
        "marketplaceProductCodes": None,
        "imageId": _s(ident.get("image_id")),
        "instanceId": _s(ident.get("instance_id")),
        "instanceType": _s(ident.get("instance_type")),
        "kernelId": None,
        "pendingTime": _s(ident.get("pending_time")),
        "privateIp": _s(ident.get("private_ipv4")),
        "ramdiskId": None,
        "region": _s(ident.get("region")),
        "version": "2017-09-30",
    }
    return json.dumps(doc, indent=2, separators=(",", " : "))


def _walk_text_tree(tree, segs):
    """Walk an EC2-style tree; returns the node or None."""
    node = tree
    for seg in segs:
        if not isinstance(node, dict) or seg not in node:
            return None
        node = node[seg]
    return node


def _render_text_tree(node, trailing_slash, terminated=True):
    """Response body for a node of an EC2-style tree, or None for 404."""
    if isinstance(node, dict):
        entries = []
        for k in sorted(node):
            v = node[k]
            if isinstance(node, _Ec2PublicKeys):
                entries.append("%s=%s" % (k, node.names[k]))
            else:
                entries.append(k + "/" if isinstance(v, dict) else k)
        return _listing(entries, terminated)
    if trailing_slash:
        return None
    if isinstance(node, list):
        return "\n".join(node)
    return node


class Ec2Dialect(Dialect):
    name = "ec2"
    server_header = "EC2ws"
    text_type = "text/plain"

    def __init__(self, fake):
        super().__init__(fake)
        self.tokens = {}  # token -> expiry (monotonic seconds)
        self.lock = threading.Lock()

    def error(self, status, message=None):
        return Response(status, _html_error(status, _reason(status)), "text/html")

    def expire_tokens(self):
        with self.lock:
            self.tokens.clear()

    def _token_ok(self, token):
        with self.lock:
            exp = self.tokens.get(token)
            if exp is None:
                return False
            if time.monotonic() >= exp:
                del self.tokens[token]
                return False
            return True

    def _put_token(self, req):
        if req.header("X-Forwarded-For") is not None:
            return self.error(403)
        ttl = req.header("X-aws-ec2-metadata-token-ttl-seconds")
        if ttl is None or not re.fullmatch(r"[0-9]{1,6}", ttl.strip()):
            return self.error(400)
        ttl_s = int(ttl.strip())
        if not 1 <= ttl_s <= EC2_TOKEN_TTL_MAX_S:
            return self.error(400)
        token = base64.b64encode(b"\x01\x00\x04" + secrets.token_bytes(39)).decode()
        with self.lock:
            self.tokens[token] = time.monotonic() + ttl_s
        return Response(200, token, "text/plain",
                        [("X-aws-ec2-metadata-token-ttl-seconds", str(ttl_s))])

    def handle(self, req):
        if req.path == EC2_TOKEN_PATH:
            if req.method != "PUT":
                return self.error(405)
            return self._put_token(req)
        if req.method == "PUT":
            return self.error(405)
        if req.method not in ("GET", "HEAD"):
            return self.error(405)
        token = req.header("X-aws-ec2-metadata-token")
        if token is not None:
            if not self._token_ok(token):
                return self.error(401)
        elif self.fake.imdsv2 == "required":
            return self.error(401)
        return self.serve_tree(req, self.ident(), EC2_VERSIONS)

    def serve_tree(self, req, ident, versions, nova=False):
        """GET on the EC2 metadata tree (shared with Nova's EC2 API)."""
        path = req.path
        listing_terminated = not nova
        if path == "/":
            return Response(200, _listing(list(versions) + ["latest"], listing_terminated),
                            self.text_type)
        segs = path.lstrip("/").split("/")
        ver = segs[0]
        if ver != "latest" and ver not in versions:
            return self.error(404)
        rest = segs[1:]
        trailing = path.endswith("/") and len(segs) > 1
        if rest and rest[-1] == "":
            rest = rest[:-1]
        if not rest:
            entries = ["meta-data"] if nova else ["dynamic", "meta-data"]
            if ident.get("user_data") is not None:
                entries.append("user-data")
            return Response(200, _listing(entries, listing_terminated), self.text_type)
        top = rest[0]
        if top == "user-data" and len(rest) == 1 and not trailing:
            if ident.get("user_data") is None:
                return self.error(404)
            return Response(200, ident["user_data"], self.text_type)
        if top == "meta-data":
            tree = nova_ec2_tree(ident) if nova else ec2_meta_data_tree(ident)
            sub = rest[1:]
            if not nova and ver != "latest":
                tree = self._filter_version(tree, ver)
            node = _walk_text_tree(tree, sub)
            body = None if node is None else _render_text_tree(node, trailing, listing_terminated)
            if body is None:
                return self.error(404)
            return Response(200, body, self.text_type)
        if top == "dynamic" and not nova:
            tree = {"instance-identity": {"document": ec2_identity_document(ident)}}
            node = _walk_text_tree(tree, rest[1:])
            body = None if node is None else _render_text_tree(node, trailing)
            if body is None:
                return self.error(404)
            return Response(200, body, self.text_type)
        return self.error(404)

    @staticmethod
    def _filter_version(tree, ver):
        tree = copy.deepcopy(tree)
        for cat, since in EC2_CATEGORY_SINCE.items():
            if ver < since:
                node = tree
                for seg in cat[:-1]:
                    node = node.get(seg, {})
                node.pop(cat[-1], None)
        return tree


# ---------------------------------------------------------------------------
# GCE
# ---------------------------------------------------------------------------

class _Verbatim(dict):
    """User-defined keys (attributes): never camelCased nor dashed."""


class _Indexed(list):
    """A list served as a directory of index-named leaves (forwarded-ips/)."""


class _Dir(list):
    """A list of objects served as a directory of `<index>/` entries, even
    when empty (network-interfaces/, access-configs/)."""


# Leaves whose default (no alt=) representation is JSON.
GCE_JSON_DEFAULT = {("instance", "tags")}


def _gce_dashed(key):
    return "".join("-" + c.lower() if c.isupper() else c for c in key)


def gce_tree(ident):
    """GCE metadata as JSON-shaped data (camelCase keys)."""
    num = str(ident.get("project_number"))

    def nic(ip, mac, public, ipv6, network, gateway, mask, mtu):
        d = {
            "accessConfigs": _Dir([] if public is None else
                                  [{"externalIp": public, "type": "ONE_TO_ONE_NAT"}]),
            "dnsServers": ["169.254.169.254"],
            "forwardedIps": _Indexed(),
            "gateway": gateway,
            "ip": ip,
            "ipAliases": _Indexed(),
            "mac": mac,
            "mtu": mtu,
            "network": "projects/%s/networks/%s" % (num, network),
            "subnetmask": mask,
            "targetInstanceIps": _Indexed(),
        }
        if ipv6:
            d["ipv6s"] = [ipv6]
        return {k: v for k, v in d.items() if v is not None}

    nics = [nic(ident.get("private_ipv4"), ident.get("mac"), ident.get("public_ipv4"),
                ident.get("ipv6"), ident.get("network") or "default", ident.get("gateway"),
                ident.get("subnetmask"), ident.get("mtu", 1460))]
    for x in ident.get("extra_interfaces") or []:
        nics.append(nic(x.get("ip"), x.get("mac"), x.get("public_ipv4"), x.get("ipv6"),
                        x.get("network") or "default", x.get("gateway"),
                        x.get("subnetmask"), x.get("mtu", 1460)))
    instance = {
        "attributes": _Verbatim(ident.get("attributes") or {}),
        "hostname": ident.get("hostname"),
        "id": int(str(ident.get("instance_id"))),
        "machineType": "projects/%s/machineTypes/%s" % (num, ident.get("instance_type")),
        "name": ident.get("name"),
        "networkInterfaces": _Dir(nics),
        "scheduling": {"automaticRestart": "TRUE", "onHostMaintenance": "MIGRATE",
                       "preemptible": "FALSE"},
        "tags": list(ident.get("tags") or []),
        "zone": "projects/%s/zones/%s" % (num, ident.get("zone")),
    }
    project = {
        "attributes": _Verbatim(ident.get("project_attributes") or {}),
        "numericProjectId": int(num),
        "projectId": ident.get("project_id"),
    }
    return {"instance": instance, "project": project}


def _gce_is_dir(v):
    return isinstance(v, (dict, _Indexed, _Dir))


def _gce_child(node, seg):
    if isinstance(node, dict):
        for k, v in node.items():
            name = k if isinstance(node, _Verbatim) else _gce_dashed(k)
            if name == seg:
                return True, v
        return False, None
    if _gce_is_dir(node) and re.fullmatch(r"0|[1-9][0-9]*", seg):
        i = int(seg)
        if i < len(node):
            return True, node[i]
    return False, None


def _gce_plain(v):
    """Drop the marker classes so json.dumps sees plain containers."""
    if isinstance(v, dict):
        return {k: _gce_plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_gce_plain(x) for x in v]
    return v


def _gce_text(prefix, o, verbatim=False):
    """Recursive alt=text rendering: `path value` lines, dashed keys."""
    out = []
    if isinstance(o, list):
        if o and isinstance(o[0], dict):
            for i, item in enumerate(o):
                out += _gce_text(prefix + ("/" if prefix else "") + str(i), item)
        else:
            for item in o:
                out += _gce_text(prefix, item)
    elif isinstance(o, dict):
        for k in sorted(o):
            name = k if isinstance(o, _Verbatim) else _gce_dashed(k)
            out += _gce_text(prefix + ("/" if prefix else "") + name, o[k])
    else:
        out.append("%s %s\n" % (prefix, o))
    return out


def _gce_flag(req, name):
    # `true` in any case: cloud-init asks for `?recursive=True`; other
    # values (`recursive=xyz`) are ignored, as GEMU checks.
    v = req.arg(name)
    return v is not None and v.lower() == "true"


class GceDialect(Dialect):
    name = "gce"
    server_header = "Metadata Server for VM"
    TEXT = "application/text"
    JSON = "application/json"
    HTML = "text/html; charset=UTF-8"

    def _resp(self, status, body, ctype, etag=True):
        headers = [("Metadata-Flavor", "Google")]
        if etag:
            body_b = body.encode() if isinstance(body, str) else body
            headers.append(("ETag", hashlib.sha1(body_b).hexdigest()[:16]))
        return Response(status, body, ctype, headers)

    def error(self, status, message=None):
        msg = message or _reason(status)
        body = ("<!DOCTYPE html>\n<html lang=en>\n<meta charset=utf-8>\n"
                "<title>Error %d (%s)</title>\n<p><b>%d.</b> <ins>%s</ins>\n"
                % (status, _reason(status), status, msg))
        return self._resp(status, body, self.HTML, etag=False)

    def handle(self, req):
        if req.method not in ("GET", "HEAD"):
            return self.error(405)
        path = req.path
        if path == "/":
            return self._resp(200, _listing(["computeMetadata/"]), self.TEXT)
        if req.header("Metadata-Flavor") != "Google":
            return self.error(403, "Missing required header: Metadata-Flavor")
        if path in ("/computeMetadata", "/computeMetadata/"):
            return self._resp(200, _listing(["v1/"]), self.TEXT)
        prefix = "/computeMetadata/v1"
        if not (path == prefix or path.startswith(prefix + "/")):
            return self.error(404)
        rel = path[len(prefix):]
        trailing = rel.endswith("/")
        segs = [s for s in rel.split("/") if s]
        if _gce_flag(req, "wait_for_change"):
            return self._wait_for_change(req, segs, trailing)
        return self._get(req, segs, trailing)

    def _get(self, req, segs, trailing):
        """The answer for the node at segs (no waiting)."""
        tree = gce_tree(self.ident())
        node = tree
        parents = []
        for seg in segs:
            found, node_next = _gce_child(node, seg)
            if not found:
                return self.error(404)
            parents.append(seg)
            node = node_next
        alt = req.arg("alt")
        recursive = _gce_flag(req, "recursive")
        if alt not in (None, "json", "text"):
            return self.error(400)
        if _gce_is_dir(node):
            if not recursive:
                if alt is not None or req.arg("wait_for_change") is not None:
                    return self.error(400)
                body = self._dir_listing(node)
                return self._resp(200, body, self.TEXT)
            if alt == "text":
                body = "".join(_gce_text("", node))
                return self._resp(200, body, self.TEXT)
            body = json.dumps(_gce_plain(node), separators=(",", ":"), sort_keys=True)
            return self._resp(200, body, self.JSON)
        if trailing:
            return self.error(404)
        as_json = alt == "json" or (alt is None and tuple(parents) in GCE_JSON_DEFAULT)
        if as_json:
            return self._resp(200, json.dumps(node, separators=(",", ":")), self.JSON)
        if isinstance(node, list):
            body = "".join("%s\n" % x for x in node)
        else:
            body = str(node)
        return self._resp(200, body, self.TEXT)

    @staticmethod
    def _dir_listing(node):
        if isinstance(node, dict):
            entries = []
            names = sorted((k if isinstance(node, _Verbatim) else _gce_dashed(k), k) for k in node)
            for name, k in names:
                entries.append(name + "/" if _gce_is_dir(node[k]) else name)
            return _listing(entries)
        entries = []
        for i, v in enumerate(node):
            entries.append("%d/" % i if isinstance(v, dict) else str(i))
        return _listing(entries)

    def _wait_for_change(self, req, segs, trailing):
        timeout = req.arg("timeout_sec")
        try:
            timeout_s = float(timeout) if timeout is not None else None
        except ValueError:
            return self.error(400)
        last = req.arg("last_etag")
        gen = self.fake.identity_generation()
        resp = self._get(req, segs, trailing)
        if resp.status != 200:
            return resp
        etag = dict(resp.headers).get("ETag")
        if last is not None and last != etag:
            return resp
        self.fake.wait_identity_change(gen, timeout_s)
        return self._get(req, segs, trailing)


# ---------------------------------------------------------------------------
# Azure IMDS
# ---------------------------------------------------------------------------

AZURE_VERSIONS = (
    "2017-03-01", "2017-04-02", "2017-08-01", "2017-10-01", "2017-12-01",
    "2018-02-01", "2018-04-02", "2018-10-01", "2019-02-01", "2019-03-11",
    "2019-04-30", "2019-06-01", "2019-06-04", "2019-08-01", "2019-08-15",
    "2019-11-01", "2020-06-01", "2020-07-15", "2020-09-01", "2020-10-01",
    "2020-12-01", "2021-01-01", "2021-02-01", "2021-03-01", "2021-05-01",
    "2021-08-01", "2021-10-01", "2021-11-01", "2021-11-15", "2021-12-13",
)
AZURE_NO_VERSION_BODY = {
    "error": "Bad request. api-version was not specified in the request. "
             "For more information refer to aka.ms/azureimds",
    "newest-versions": ["2020-10-01", "2020-09-01", "2020-07-15"],
}
AZURE_BAD_VERSION_ERROR = ("Bad request. api-version is invalid or was not specified in the "
                           "request. For more information refer to aka.ms/azureimds")
# compute fields and the api-version that introduced them (AZDOC schema table).
AZURE_COMPUTE_SINCE = {
    "azEnvironment": "2018-10-01", "location": "2017-04-02", "name": "2017-04-02",
    "offer": "2017-04-02", "osProfile": "2020-07-15", "osType": "2017-04-02",
    "placementGroupId": "2017-08-01", "platformFaultDomain": "2017-04-02",
    "platformUpdateDomain": "2017-04-02", "provider": "2018-10-01",
    "publisher": "2017-04-02", "resourceGroupName": "2017-08-01",
    "resourceId": "2019-03-11", "sku": "2017-04-02", "subscriptionId": "2017-08-01",
    "tags": "2017-08-01", "tagsList": "2019-06-04", "version": "2017-04-02",
    "vmId": "2017-04-02", "vmScaleSetName": "2017-12-01", "vmSize": "2017-04-02",
    "zone": "2017-12-01",
}
AZURE_LB_SINCE = "2020-10-01"
AZURE_RATE_LIMIT_PER_S = 5


def azure_resource_id(ident):
    if ident.get("resource_id"):
        return ident["resource_id"]
    base = "/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/" % (
        ident.get("subscription_id"), ident.get("resource_group"))
    if ident.get("vm_scale_set"):
        return base + "virtualMachineScaleSets/%s/virtualMachines/%s" % (
            ident["vm_scale_set"], ident.get("vmss_instance_id", "0"))
    return base + "virtualMachines/%s" % ident.get("name")


def _azure_mac(mac):
    return (mac or "").replace(":", "").replace("-", "").upper()


def azure_instance(ident, api_version=None):
    """The /metadata/instance document; every primitive is a string."""
    def s(v):
        return "" if v is None else str(v)

    compute = {
        "azEnvironment": s(ident.get("az_environment")),
        "location": s(ident.get("region")),
        "name": s(ident.get("name")),
        "offer": s(ident.get("offer")),
        "osProfile": {"adminUsername": s(ident.get("admin_username")),
                      "computerName": s(ident.get("hostname") or ident.get("name")),
                      "disablePasswordAuthentication": "true"},
        "osType": s(ident.get("os_type") or "Linux"),
        "placementGroupId": s(ident.get("placement_group_id")),
        "platformFaultDomain": s(ident.get("platform_fault_domain")),
        "platformUpdateDomain": s(ident.get("platform_update_domain")),
        "provider": "Microsoft.Compute",
        "publisher": s(ident.get("publisher")),
        "resourceGroupName": s(ident.get("resource_group")),
        "resourceId": azure_resource_id(ident),
        "sku": s(ident.get("sku")),
        "subscriptionId": s(ident.get("subscription_id")),
        "tags": "",
        "tagsList": [],
        "version": s(ident.get("image_version")),
        "vmId": s(ident.get("instance_id")),
        "vmScaleSetName": s(ident.get("vm_scale_set")),
        "vmSize": s(ident.get("instance_type")),
        "zone": s(ident.get("zone")),
    }
    if api_version:
        compute = {k: v for k, v in compute.items()
                   if api_version >= AZURE_COMPUTE_SINCE.get(k, "0")}

    def iface(mac, private, public, ipv6, subnet_address, subnet_prefix):
        return {
            "ipv4": {
                "ipAddress": ([{"privateIpAddress": private, "publicIpAddress": s(public)}]
                              if private else []),
                "subnet": ([{"address": s(subnet_address), "prefix": s(subnet_prefix)}]
                           if subnet_address else []),
            },
            "ipv6": {"ipAddress": [{"privateIpAddress": ipv6}] if ipv6 else []},
            "macAddress": _azure_mac(mac),
        }

    ifaces = [iface(ident.get("mac"), ident.get("private_ipv4"), ident.get("public_ipv4"),
                    ident.get("ipv6"), ident.get("subnet_address"), ident.get("subnet_prefix"))]
    for x in ident.get("extra_interfaces") or []:
        ifaces.append(iface(x.get("mac"), x.get("private_ipv4"), x.get("public_ipv4"),
                            x.get("ipv6"), x.get("subnet_address", ident.get("subnet_address")),
                            x.get("subnet_prefix", ident.get("subnet_prefix"))))
    return {"compute": compute, "network": {"interface": ifaces}}


class AzureDialect(Dialect):
    name = "azure"
    server_header = "Microsoft-IIS/10.0"
    JSON = "application/json; charset=utf-8"
    TEXT = "text/plain; charset=utf-8"

    def __init__(self, fake):
        super().__init__(fake)
        self.lock = threading.Lock()
        self.recent = []  # monotonic times of recent requests (rate limit)

    def error(self, status, message=None):
        return Response(status, _compact({"error": message or _reason(status)}), self.JSON)

    def _rate_limited(self):
        if not self.fake.azure_rate_limit:
            return False
        now = time.monotonic()
        with self.lock:
            self.recent = [t for t in self.recent if now - t < 1.0]
            if len(self.recent) >= AZURE_RATE_LIMIT_PER_S:
                return True
            self.recent.append(now)
            return False

    def handle(self, req):
        if req.header("X-Forwarded-For") is not None:
            return self.error(400, "Bad request. X-Forwarded-For header is not allowed")
        md = req.header("Metadata")
        if md is None or md.strip().lower() != "true":
            return self.error(400, "Bad request. Required metadata header not specified")
        if req.method != "GET":
            return self.error(405, 'Http method not allowed: path = "%s", method = "%s"'
                              % (req.path, req.method))
        if self._rate_limited():
            return self.error(429, "Too many requests")
        names = [k for k, _ in req.query]
        if len(names) != len(set(names)):
            return self.error(400, "Bad request. Duplicate query parameters")
        path = req.path.rstrip("/") or "/"
        if path == "/metadata/versions":
            return Response(200, _compact({"apiVersions": list(AZURE_VERSIONS)}), self.JSON)
        if path == "/metadata/instance" or path.startswith("/metadata/instance/"):
            return self._instance(req, path)
        if path == "/metadata/loadbalancer":
            return self._loadbalancer(req)
        return self.error(404, 'Not found. API: path = "%s", method = "GET"' % req.path)

    def _api_version(self, req):
        v = req.arg("api-version")
        if v is None:
            return None, Response(400, _compact(AZURE_NO_VERSION_BODY), self.JSON)
        if v not in AZURE_VERSIONS:
            body = {"error": AZURE_BAD_VERSION_ERROR,
                    "newest-versions": AZURE_NO_VERSION_BODY["newest-versions"]}
            return None, Response(400, _compact(body), self.JSON)
        return v, None

    def _instance(self, req, path):
        version, err = self._api_version(req)
        if err:
            return err
        fmt = req.arg("format", "json")
        if fmt not in ("json", "text"):
            return self.error(400, "Bad request. Unsupported format: %s" % fmt)
        node = azure_instance(self.ident(), version)
        for seg in path.split("/")[3:]:
            if isinstance(node, dict) and seg in node:
                node = node[seg]
            elif (isinstance(node, list) and re.fullmatch(r"0|[1-9][0-9]*", seg)
                  and int(seg) < len(node)):
                node = node[int(seg)]
            else:
                return self.error(404, 'Not found. API: path = "%s", method = "GET"' % req.path)
        if isinstance(node, str):
            if fmt != "text":
                return self.error(400, "Bad request. Leaf nodes only support format=text")
            return Response(200, node, self.TEXT)
        if fmt == "text":
            keys = (sorted(node) if isinstance(node, dict) else [str(i) for i in range(len(node))])
            items = node if isinstance(node, dict) else dict(zip(keys, node))
            entries = [k if isinstance(items[k], str) else k + "/" for k in keys]
            return Response(200, _listing(entries), self.TEXT)
        return Response(200, _compact(node), self.JSON)

    def _loadbalancer(self, req):
        version, err = self._api_version(req)
        if err:
            return err
        if version < AZURE_LB_SINCE:
            return self.error(400, "Bad request. api-version %s does not support loadbalancer"
                              % version)
        if req.arg("format", "json") != "json":
            return self.error(400, "Bad request. Unsupported format")
        ident = self.ident()
        lb = ident.get("lb_public_ipv4")
        if not lb:
            return self.error(404, "No load balancer metadata is found. Please check if your "
                                   "VM is using any non-basic SKU load balancer and retry later.")
        body = {"loadbalancer": {"publicIpAddresses": [
            {"frontendIpAddress": lb, "privateIpAddress": _s(ident.get("private_ipv4")) or ""}]}}
        return Response(200, _compact(body), self.JSON)


# ---------------------------------------------------------------------------
# OpenStack (Nova metadata service; same documents as the config drive)
# ---------------------------------------------------------------------------

OPENSTACK_VERSIONS = ("2012-08-10", "2013-04-04", "2013-10-17", "2015-10-15",
                      "2016-06-30", "2016-10-06", "2017-02-22", "2018-08-27")
# Files per version and the version that introduced them.
OPENSTACK_FILES_SINCE = {
    "meta_data.json": "2012-08-10",
    "password": "2013-04-04",
    "vendor_data.json": "2013-10-17",
    "network_data.json": "2015-10-15",
    "vendor_data2.json": "2016-10-06",
}


def openstack_meta_data(ident):
    return {
        "uuid": _s(ident.get("instance_id")),
        "meta": dict(ident.get("meta") or {}),
        "public_keys": dict(ident.get("public_keys") or {}),
        "keys": [{"name": k, "type": "ssh", "data": v}
                 for k, v in (ident.get("public_keys") or {}).items()],
        "hostname": _s(ident.get("hostname")),
        "name": _s(ident.get("name")),
        "launch_index": int(ident.get("launch_index") or 0),
        "availability_zone": _s(ident.get("zone")),
        "random_seed": base64.b64encode(
            hashlib.sha512(str(ident.get("instance_id")).encode()).digest()).decode(),
        "project_id": _s(ident.get("project_id")),
        "devices": list(ident.get("devices") or []),
    }


def openstack_network_data(ident):
    if ident.get("network_data") is not None:
        return copy.deepcopy(ident["network_data"])
    port = _s(ident.get("port_id")) or "00000000-0000-0000-0000-000000000000"
    link_id = "tap" + port[:11]
    link = {"id": link_id, "type": "ovs", "ethernet_mac_address": ident.get("mac"),
            "mtu": ident.get("mtu"), "vif_id": port}
    networks = []
    if ident.get("private_ipv4"):
        if ident.get("network_type") == "ipv4":
            networks.append({"id": "network0", "link": link_id, "type": "ipv4",
                             "ip_address": ident["private_ipv4"],
                             "netmask": ident.get("netmask", "255.255.255.0"),
                             "routes": list(ident.get("routes") or []),
                             "network_id": ident.get("network_id"),
                             "services": []})
        else:
            networks.append({"id": "network0", "link": link_id, "type": "ipv4_dhcp",
                             "network_id": ident.get("network_id")})
    if ident.get("ipv6"):
        networks.append({"id": "network%d" % len(networks), "link": link_id, "type": "ipv6",
                         "ip_address": ident["ipv6"], "netmask": "ffff:ffff:ffff:ffff::",
                         "routes": [], "network_id": ident.get("network_id"), "services": []})
    services = [{"type": "dns", "address": a} for a in ident.get("dns_servers") or []]
    return {"links": [link], "networks": networks, "services": services}


def nova_ec2_tree(ident):
    """The EC2-compatible meta-data tree Nova serves (no token)."""
    md = {
        "ami-id": "ami-00000001",
        "ami-launch-index": str(ident.get("launch_index") or 0),
        "ami-manifest-path": "FIXME",  # literally what Nova answers
        "block-device-mapping": {"ami": "vda", "root": "/dev/vda"},
        "hostname": _s(ident.get("hostname")),
        "instance-action": "none",
        "instance-id": _s(ident.get("ec2_instance_id")),
        "instance-type": _s(ident.get("instance_type")),
        "local-hostname": _s(ident.get("hostname")),
        "local-ipv4": _s(ident.get("private_ipv4")),
        "placement": {"availability-zone": _s(ident.get("zone"))},
        "public-hostname": _s(ident.get("hostname")),
        "public-ipv4": _s(ident.get("public_ipv4")) or "",
        "reservation-id": "r-" + _digest(ident.get("instance_id"))[:8],
        "security-groups": ["default"],
    }
    keys = ident.get("public_keys") or {}
    if keys:
        md["public-keys"] = _Ec2PublicKeys(
            (str(i), (name, {"openssh-key": key})) for i, (name, key) in enumerate(keys.items()))
    return _prune(md)


def write_configdrive(ident, dest):
    """Write a config drive tree (openstack/latest/*) for ident under dest."""
    latest = os.path.join(dest, "openstack", "latest")
    os.makedirs(latest, exist_ok=True)
    docs = {
        "meta_data.json": openstack_meta_data(ident),
        "network_data.json": openstack_network_data(ident),
        "vendor_data.json": {},
        "vendor_data2.json": {},
    }
    for name, doc in docs.items():
        with open(os.path.join(latest, name), "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    user_data = os.path.join(latest, "user_data")
    if ident.get("user_data") is not None:
        with open(user_data, "w", encoding="utf-8") as f:
            f.write(ident["user_data"])
    elif os.path.exists(user_data):
        os.unlink(user_data)


class OpenStackDialect(Dialect):
    name = "openstack"
    server_header = "nova-metadata"
    JSON = "application/json"
    TEXT = "text/plain; charset=UTF-8"

    def __init__(self, fake):
        super().__init__(fake)
        self.ec2 = Ec2Dialect(fake)
        self.ec2.text_type = self.TEXT
        self.ec2.error = self.error

    def error(self, status, message=None):
        return Response(status, "%d %s\n\n%s\n\n" % (status, _reason(status), message or ""),
                        self.TEXT)

    def handle(self, req):
        if req.method not in ("GET", "HEAD"):
            return self.error(405, "The method specified is not allowed for this resource.")
        ident = self.ident()
        path = req.path
        if path == "/openstack" or path.startswith("/openstack/"):
            return self._openstack(path, ident)
        return self.ec2.serve_tree(req, ident, NOVA_EC2_VERSIONS, nova=True)

    def _openstack(self, path, ident):
        segs = [s for s in path.split("/")[2:]]
        if segs and segs[-1] == "":
            segs = segs[:-1]
        if not segs:
            return Response(200, _listing(list(OPENSTACK_VERSIONS) + ["latest"], False), self.TEXT)
        ver = segs[0]
        if ver != "latest" and ver not in OPENSTACK_VERSIONS:
            return self.error(404)
        eff = OPENSTACK_VERSIONS[-1] if ver == "latest" else ver
        files = [f for f, since in OPENSTACK_FILES_SINCE.items() if eff >= since]
        if ident.get("user_data") is not None:
            files.append("user_data")
        if len(segs) == 1:
            return Response(200, _listing(files, False), self.TEXT)
        if len(segs) != 2 or segs[1] not in files:
            return self.error(404)
        name = segs[1]
        if name == "meta_data.json":
            return Response(200, json.dumps(openstack_meta_data(ident)), self.JSON)
        if name == "network_data.json":
            return Response(200, json.dumps(openstack_network_data(ident)), self.JSON)
        if name in ("vendor_data.json", "vendor_data2.json"):
            return Response(200, "{}", self.JSON)
        if name == "password":
            return Response(200, "", self.TEXT)
        return Response(200, ident["user_data"], self.TEXT)


# ---------------------------------------------------------------------------
# DigitalOcean
# ---------------------------------------------------------------------------

def digitalocean_document(ident):
    pub, priv = [], []
    if ident.get("public_ipv4") or ident.get("ipv6"):
        nic = {"mac": ident.get("mac"), "type": "public"}
        if ident.get("public_ipv4"):
            nic["ipv4"] = {"ip_address": ident["public_ipv4"],
                           "netmask": ident.get("public_netmask"),
                           "gateway": ident.get("public_gateway")}
        if ident.get("ipv6"):
            nic["ipv6"] = {"ip_address": ident["ipv6"], "cidr": ident.get("ipv6_cidr", 64),
                           "gateway": ident.get("ipv6_gateway")}
        if ident.get("anchor_ipv4"):
            nic["anchor_ipv4"] = dict(ident["anchor_ipv4"])
        pub.append(nic)
    if ident.get("private_ipv4"):
        priv.append({"mac": ident.get("private_mac"), "type": "private",
                     "ipv4": {"ip_address": ident["private_ipv4"],
                              "netmask": ident.get("private_netmask"),
                              "gateway": ident.get("private_gateway")}})
    floating = {"active": bool(ident.get("floating_ipv4"))}
    if ident.get("floating_ipv4"):
        floating["ip_address"] = ident["floating_ipv4"]
    doc = {
        "droplet_id": int(str(ident.get("instance_id"))),
        "hostname": ident.get("hostname"),
        "user_data": ident.get("user_data"),
        "vendor_data": ident.get("vendor_data") or "",
        "public_keys": list(ident.get("public_keys") or []),
        "auth_key": ident.get("auth_key") or "",
        "region": ident.get("region"),
        "interfaces": {"private": priv, "public": pub},
        "floating_ip": {"ipv4": floating},
        "dns": {"nameservers": list(ident.get("nameservers") or [])},
        "tags": list(ident.get("tags") or []),
        "features": {"dhcp_enabled": False},
    }
    if doc["user_data"] is None:
        del doc["user_data"]
    return doc


def digitalocean_tree(ident):
    """The plain-text /metadata/v1/ tree (keys in the order DO lists them)."""
    doc = digitalocean_document(ident)

    def nic_tree(nic):
        t = {}
        if "anchor_ipv4" in nic:
            a = nic["anchor_ipv4"]
            t["anchor_ipv4"] = {"address": a.get("ip_address"), "netmask": a.get("netmask"),
                                "gateway": a.get("gateway")}
        if "ipv4" in nic:
            t["ipv4"] = {"address": nic["ipv4"]["ip_address"], "netmask": nic["ipv4"]["netmask"],
                         "gateway": nic["ipv4"]["gateway"]}
        if "ipv6" in nic:
            t["ipv6"] = {"address": nic["ipv6"]["ip_address"], "cidr": str(nic["ipv6"]["cidr"]),
                         "gateway": nic["ipv6"]["gateway"]}
        t["mac"] = nic["mac"]
        t["type"] = nic["type"]
        return t

    interfaces = {}
    for kind in ("private", "public"):
        if doc["interfaces"][kind]:
            interfaces[kind] = {str(i): nic_tree(n) for i, n in enumerate(doc["interfaces"][kind])}
    fl = {"active": "true" if doc["floating_ip"]["ipv4"]["active"] else "false"}
    if "ip_address" in doc["floating_ip"]["ipv4"]:
        fl["ip_address"] = doc["floating_ip"]["ipv4"]["ip_address"]
    tree = {
        "id": str(doc["droplet_id"]),
        "hostname": doc["hostname"],
        "user-data": doc.get("user_data"),
        "vendor-data": doc["vendor_data"],
        "public-keys": doc["public_keys"],
        "region": doc["region"],
        "interfaces": interfaces,
        "dns": {"nameservers": doc["dns"]["nameservers"]},
        "floating_ip": {"ipv4": fl},
        "tags": doc["tags"],
    }
    return _prune(tree)


class DigitalOceanDialect(Dialect):
    name = "digitalocean"
    server_header = "fake-metadata"
    JSON = "application/json"
    TEXT = "text/plain; charset=utf-8"

    def handle(self, req):
        if req.method not in ("GET", "HEAD"):
            return self.error(405)
        ident = self.ident()
        path = req.path
        if path == "/metadata/v1.json":
            return Response(200, json.dumps(digitalocean_document(ident)), self.JSON)
        prefix = "/metadata/v1"
        if path != prefix and not path.startswith(prefix + "/"):
            return self.error(404)
        rel = path[len(prefix):]
        trailing = rel.endswith("/")
        segs = [s for s in rel.split("/") if s]
        tree = digitalocean_tree(ident)
        node = tree
        for seg in segs:
            if not isinstance(node, dict) or seg not in node:
                return self.error(404)
            node = node[seg]
        if isinstance(node, dict):
            keys = list(node) if node is tree else sorted(node)
            entries = [k + "/" if isinstance(node[k], dict) or (k == "tags" and node is tree)
                       else k for k in keys]
            return Response(200, _listing(entries), self.TEXT)
        if isinstance(node, list):
            # tags/ is listed as a directory of tag names; tags and
            # public-keys are also readable as one newline-separated leaf.
            return Response(200, _listing(node), self.TEXT)
        if trailing:
            return self.error(404)
        return Response(200, node, self.TEXT)


# ---------------------------------------------------------------------------
# Hetzner Cloud
# ---------------------------------------------------------------------------

HETZNER_PN_KEYS = ("ip", "alias_ips", "interface_num", "mac_address", "network_id",
                   "network_name", "network", "subnet", "gateway")


def hetzner_private_networks(ident):
    nets = ident.get("private_networks")
    if nets is None:
        nets = []
        if ident.get("private_ipv4"):
            nets = [{"ip": ident["private_ipv4"], "alias_ips": [], "interface_num": 1,
                     "mac_address": "86:00:00:00:00:01", "network_id": 1,
                     "network_name": "default", "network": "10.0.0.0/8",
                     "subnet": "10.0.0.0/24", "gateway": "10.0.0.1"}]
    out = []
    for n in nets:
        out.append({k: n.get(k) for k in HETZNER_PN_KEYS if k in n})
    return out


def hetzner_metadata(ident):
    """The root /hetzner/v1/metadata map (keys sorted, as served)."""
    subnets = [{"ipv4": True, "type": "dhcp"}] if ident.get("public_ipv4") else []
    if ident.get("ipv6"):
        subnets.append({"address": ident["ipv6"] + "/64", "gateway": "fe80::1",
                        "ipv6": True, "type": "static"})
    netcfg = {"config": [{"mac_address": ident.get("mac"), "name": "eth0",
                          "subnets": subnets, "type": "physical"}], "version": 1}
    sysconfig = "DEVICE='eth0'\nONBOOT='yes'\n"
    if ident.get("public_ipv4"):
        sysconfig += "BOOTPROTO='dhcp'\n"
    if ident.get("ipv6"):
        sysconfig += ("IPV6INIT='yes'\nIPV6ADDR='%s/64'\nIPV6_DEFAULTGW='fe80::1%%eth0'\n"
                      "IPV6_AUTOCONF='no'\n" % ident["ipv6"])
    iid = str(ident.get("instance_id"))
    return {
        "availability-zone": _s(ident.get("zone")) or "",
        "hostname": _s(ident.get("hostname")) or "",
        "instance-id": int(iid) if iid.isdigit() else iid,
        "local-ipv4": "",
        "network-config": netcfg,
        "network-sysconfig": sysconfig,
        "public-ipv4": _s(ident.get("public_ipv4")) or "",
        "public-keys": list(ident.get("public_keys") or []),
        "region": _s(ident.get("region")) or "",
        "vendor_data": ident.get("vendor_data") or "",
    }


class HetznerDialect(Dialect):
    name = "hetzner"
    server_header = "fake-metadata"
    TEXT = "text/plain; charset=utf-8"
    LEAVES = ("availability-zone", "hostname", "instance-id", "local-ipv4", "public-ipv4",
              "region")

    def handle(self, req):
        if req.method not in ("GET", "HEAD"):
            return self.error(405)
        ident = self.ident()
        path = req.path
        if path.endswith("/") and len(path) > 1:
            path = path[:-1]
        if path == "/hetzner/v1/userdata":
            if not ident.get("user_data"):
                return Response(204, b"", None)
            return Response(200, ident["user_data"], self.TEXT)
        root = "/hetzner/v1/metadata"
        if path == root:
            return Response(200, yaml_dump(hetzner_metadata(ident)), self.TEXT)
        if not path.startswith(root + "/"):
            return self.error(404)
        key = path[len(root) + 1:]
        if key == "private-networks":
            return Response(200, yaml_dump(hetzner_private_networks(ident)), self.TEXT)
        meta = hetzner_metadata(ident)
        if key in self.LEAVES:
            return Response(200, str(meta[key]), self.TEXT)
        if key in ("public-keys", "network-config"):
            return Response(200, yaml_dump(meta[key]), self.TEXT)
        return self.error(404)


DIALECT_CLASSES = {
    "ec2": Ec2Dialect, "gce": GceDialect, "azure": AzureDialect,
    "openstack": OpenStackDialect, "digitalocean": DigitalOceanDialect,
    "hetzner": HetznerDialect,
}


# ---------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------

FAULT_ACTIONS = ("status", "delay", "truncate", "malformed", "drop")


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, addr, fake, control_only):
        self.fake = fake
        self.control_only = control_only
        self.conns = set()
        self.conns_lock = threading.Lock()
        super().__init__(addr, _Handler)

    def process_request(self, request, client_address):
        with self.conns_lock:
            self.conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.conns_lock:
            self.conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        # Connections cut by go_down/drop faults are expected; anything else
        # is a bug in the fake and gets the usual traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def start_thread(self):
        """Run the accept loop in a daemon thread until halt()."""
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        # serve_forever() polls for shutdown; a wake-up socket makes halt()
        # (and so go_down/stop) immediate instead.
        sel = selectors.DefaultSelector()
        sel.register(self, selectors.EVENT_READ)
        sel.register(self._wake_r, selectors.EVENT_READ)
        try:
            while True:
                for key, _ in sel.select():
                    if key.fileobj is self._wake_r:
                        return
                    self._handle_request_noblock()
        finally:
            sel.close()

    def halt(self):
        """Stop accepting, close the listening socket."""
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join()
        self._wake_r.close()
        self._wake_w.close()
        self.server_close()

    def drop_connections(self, exclude=None):
        with self.conns_lock:
            conns = [c for c in self.conns if c is not exclude]
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # Like the real services (Go servers): no Nagle delay between the
        # header and body writes of an answer, which a client's delayed ACK
        # would otherwise turn into ~40 ms per request on keep-alive.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def version_string(self):
        return self.server.fake.dialect.server_header

    def log_message(self, fmt, *args):
        pass

    def _dispatch(self):
        length = self.headers.get("Content-Length")
        body = b""
        if length and length.isdigit() and int(length) > 0:
            body = self.rfile.read(int(length))
        req = Request(self.command, self.path, self.headers, body)
        fake = self.server.fake
        if req.path == "/_fake" or req.path.startswith("/_fake/"):
            return fake._control(self, req)
        if self.server.control_only:
            return self.write(Response(404, "not a control path\n", "text/plain"))
        fake._serve(self, req)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = do_OPTIONS = _dispatch

    def write(self, resp, truncate_keep=None):
        """Send resp; with truncate_keep, announce the full length, send only
        that many body bytes and close the connection."""
        try:
            self.send_response(resp.status)
            for k, v in resp.headers:
                self.send_header(k, v)
            if resp.status not in (204, 304) or resp.body:
                self.send_header("Content-Length", str(len(resp.body)))
            if truncate_keep is not None:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(resp.body if truncate_keep is None else resp.body[:truncate_keep])
            self.wfile.flush()
            if truncate_keep is not None:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_WR)
        except OSError:
            self.close_connection = True


class FakeMetadata:
    """A fake metadata service for one dialect.

    dialect   one of DIALECTS
    identity  dict or JSON file merged over identities/<dialect>.json (None: default)
    port      TCP port on host (0: pick a free one; kept across go_down/come_up)
    log_file  append one JSON line per answered request
    imdsv2    ec2 only: "required" (tokenless GET -> 401) or "optional"
    azure_rate_limit  azure only: answer 429 beyond 5 requests per second
    """

    def __init__(self, dialect, identity=None, port=0, host="127.0.0.1", log_file=None,
                 imdsv2="required", azure_rate_limit=False, control_port=None):
        _check_dialect(dialect)
        if imdsv2 not in ("required", "optional"):
            raise ValueError("imdsv2 must be 'required' or 'optional'")
        self.dialect_name = dialect
        self.host = host
        self.port = port
        self.control_port = control_port
        self.log_file = log_file
        self.imdsv2 = imdsv2
        self.azure_rate_limit = azure_rate_limit
        self._identity = load_identity(dialect, identity)
        self._generation = 0
        self._cond = threading.Condition()
        self._lock = threading.Lock()
        self._log = []
        self._seq = 0
        self._faults = []
        self._fault_seq = 0
        self._httpd = None
        self._ctl = None
        self._down_evt = threading.Event()
        self._stopped = threading.Event()
        self._timers = []
        self._life = threading.RLock()
        self.dialect = DIALECT_CLASSES[dialect](self)

    # -- lifecycle ---------------------------------------------------------

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    @property
    def is_up(self):
        return self._httpd is not None

    def start(self):
        """Start listening; returns self.  Raises OSError if the port is taken."""
        self._stopped.clear()
        self.come_up()
        if self.control_port is not None and self._ctl is None:
            self._ctl = _HTTPServer((self.host, self.control_port), self, control_only=True)
            self.control_port = self._ctl.server_address[1]
            self._ctl.start_thread()
        return self

    def stop(self):
        """Stop listening, drop connections, wake delayed requests."""
        self._stopped.set()
        with self._life:
            for t in self._timers:
                t.cancel()
            self._timers = []
        self.go_down()
        with self._cond:
            self._cond.notify_all()
        if self._ctl is not None:
            self._ctl.halt()
            self._ctl.drop_connections()
            self._ctl = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def go_down(self, for_s=None, _exclude=None):
        """Stop listening (new connections are refused) and drop open ones.
        With for_s, come back up after that many seconds."""
        with self._life:
            httpd, self._httpd = self._httpd, None
            self._down_evt.set()
            if for_s is not None and not self._stopped.is_set():
                t = threading.Timer(for_s, self._come_up_unless_stopped)
                t.daemon = True
                self._timers.append(t)
                t.start()
        if httpd is not None:
            httpd.halt()
            httpd.drop_connections(exclude=_exclude)

    def flap(self, down_s, up_s):
        """Go down for down_s seconds, up for up_s, and so on, until
        stop_flapping() or stop(); the first period is down."""
        self.stop_flapping()
        evt = threading.Event()

        def run():
            while not evt.is_set() and not self._stopped.is_set():
                self.go_down()
                if evt.wait(down_s):
                    break
                try:
                    self.come_up()
                except OSError:
                    pass
                evt.wait(up_s)
        self._flap = (evt, threading.Thread(target=run, name="md-flap", daemon=True))
        self._flap[1].start()

    def stop_flapping(self):
        """End flap(), leaving the service up."""
        f, self._flap = getattr(self, "_flap", None), None
        if f is not None:
            f[0].set()
            f[1].join(5)
            if not self._stopped.is_set():
                self.come_up()

    def _come_up_unless_stopped(self):
        # Under _life so a concurrent stop() either sees us up and takes us
        # down, or has already set _stopped.
        with self._life:
            self._timers = [t for t in self._timers if t.is_alive()]
            if self._stopped.is_set():
                return
            try:
                self.come_up()
            except OSError:
                pass  # the port was taken meanwhile: stay down

    def come_up(self):
        """Listen again on the same port (no-op if up)."""
        with self._life:
            if self._httpd is not None:
                return
            httpd = _HTTPServer((self.host, self.port), self, control_only=False)
            self.port = httpd.server_address[1]
            self._down_evt = threading.Event()
            self._httpd = httpd
            httpd.start_thread()

    # -- identity ----------------------------------------------------------

    def identity_snapshot(self):
        with self._cond:
            return copy.deepcopy(self._identity)

    @property
    def identity(self):
        return self.identity_snapshot()

    def identity_generation(self):
        with self._cond:
            return self._generation

    def set_identity(self, identity, merge=False):
        """Replace the identity (merge=True: update keys of the current one)."""
        with self._cond:
            if merge:
                new = copy.deepcopy(self._identity)
                new.update(copy.deepcopy(identity))
            else:
                new = load_identity(self.dialect_name, identity)
            self._identity = new
            self._generation += 1
            self._cond.notify_all()

    def update_identity(self, **changes):
        self.set_identity(changes, merge=True)

    def wait_identity_change(self, generation, timeout_s):
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            while self._generation == generation and not self._stopped.is_set():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left if left is not None else 1.0)
            return self._generation != generation

    # -- faults ------------------------------------------------------------

    def add_fault(self, action="status", status=500, count=1, path=None, method=None,
                  delay_s=0.0, body=None, keep=None):
        """Add a fault rule; returns its id.

        action  status: answer `status` in the dialect's error format
                delay: wait delay_s, then answer normally
                truncate: announce the full Content-Length, send `keep` bytes
                          (default half the body), close the connection
                malformed: answer 200 with `body` (default: invalid JSON/UTF-8)
                drop: close the connection without any answer
        count   number of matching requests it applies to (None: until cleared)
        path    fnmatch pattern on the URL path without query (None: any)
        method  only requests with this method (None: any)
        delay_s seconds to wait before acting (any action)
        """
        if action not in FAULT_ACTIONS:
            raise ValueError("action must be one of %s" % ", ".join(FAULT_ACTIONS))
        if count is not None and count < 1:
            raise ValueError("count must be >= 1 or None")
        if isinstance(body, str):
            body = body.encode("utf-8")
        with self._lock:
            self._fault_seq += 1
            self._faults.append({
                "id": self._fault_seq, "action": action, "status": int(status),
                "count": count, "path": path, "method": method,
                "delay_s": float(delay_s or 0), "body": body, "keep": keep,
            })
            return self._fault_seq

    def fail(self, status=500, count=1, path=None, method=None):
        return self.add_fault("status", status=status, count=count, path=path, method=method)

    def delay(self, seconds, count=1, path=None, method=None):
        return self.add_fault("delay", delay_s=seconds, count=count, path=path, method=method)

    def truncate(self, path=None, count=1, keep=None, method=None):
        return self.add_fault("truncate", count=count, path=path, keep=keep, method=method)

    def malform(self, path=None, body=None, count=1, method=None):
        return self.add_fault("malformed", count=count, path=path, body=body, method=method)

    def drop(self, path=None, count=1, method=None):
        return self.add_fault("drop", count=count, path=path, method=method)

    def faults(self):
        with self._lock:
            return [{k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
                     for k, v in f.items()} for f in self._faults]

    def clear_faults(self, fault_id=None):
        with self._lock:
            self._faults = [f for f in self._faults
                            if fault_id is not None and f["id"] != fault_id]

    def _take_fault(self, req):
        with self._lock:
            for f in self._faults:
                if f["method"] is not None and f["method"] != req.method:
                    continue
                if f["path"] is not None and not fnmatch.fnmatchcase(req.path, f["path"]):
                    continue
                rule = dict(f)
                if f["count"] is not None:
                    f["count"] -= 1
                    if f["count"] == 0:
                        self._faults.remove(f)
                return rule
        return None

    # -- ec2 controls --------------------------------------------------------

    def expire_tokens(self):
        """Invalidate every EC2 session token issued so far."""
        if isinstance(self.dialect, Ec2Dialect):
            self.dialect.expire_tokens()

    def set_imdsv2(self, mode):
        if mode not in ("required", "optional"):
            raise ValueError("mode must be 'required' or 'optional'")
        self.imdsv2 = mode

    # -- request log -------------------------------------------------------

    def request_log(self):
        """Answered requests, oldest first: dicts with seq, time, method, path
        (with query), headers (the LOGGED_HEADERS present), status (0 when
        dropped) and fault (the fault action applied, or None)."""
        with self._lock:
            return copy.deepcopy(self._log)

    def clear_log(self):
        with self._lock:
            self._log = []

    def _record(self, req, status, fault):
        headers = {}
        for name in LOGGED_HEADERS:
            v = req.headers.get(name)
            if v is not None:
                headers[name] = v
        with self._lock:
            self._seq += 1
            entry = {"seq": self._seq, "time": time.time(), "method": req.method,
                     "path": req.target, "headers": headers, "status": status,
                     "fault": fault}
            self._log.append(entry)
            if self.log_file:
                with open(self.log_file, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry) + "\n")

    # -- serving -----------------------------------------------------------

    def _serve(self, handler, req):
        rule = self._take_fault(req)
        action = rule["action"] if rule else None
        if rule and rule["delay_s"] > 0:
            down = self._down_evt
            down.wait(rule["delay_s"])
            if down.is_set() or self._stopped.is_set():
                self._record(req, 0, action)  # cut off by go_down/stop
                handler.close_connection = True
                return
        if action == "drop":
            self._record(req, 0, "drop")
            handler.close_connection = True
            try:
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                              struct.pack("ii", 1, 0))
            except OSError:
                pass
            return
        if action == "status":
            resp = self.dialect.error(rule["status"])
        else:
            try:
                resp = self.dialect.handle(req)
            except Exception as e:  # a bug in the fake: say so loudly
                resp = Response(500, "fake metadata internal error: %r\n" % (e,), "text/plain")
        keep = None
        if action == "malformed":
            resp.body = rule["body"] if rule["body"] is not None else DEFAULT_MALFORMED_BODY
            resp.status = 200
        elif action == "truncate":
            keep = rule["keep"] if rule["keep"] is not None else len(resp.body) // 2
            keep = max(0, min(keep, max(len(resp.body) - 1, 0)))
        self._record(req, resp.status, action)
        handler.write(resp, truncate_keep=keep)

    # -- HTTP control API (/_fake/...) ---------------------------------------

    def _control(self, handler, req):
        def reply(status, obj):
            handler.write(Response(status, json.dumps(obj) + "\n", "application/json"))

        try:
            data = json.loads(req.body.decode("utf-8")) if req.body.strip() else {}
        except (ValueError, UnicodeDecodeError):
            return reply(400, {"error": "body is not JSON"})
        if not isinstance(data, dict):
            return reply(400, {"error": "body must be a JSON object"})
        p, m = req.path.rstrip("/"), req.method
        try:
            if p == "/_fake/status" and m == "GET":
                return reply(200, {"dialect": self.dialect_name, "up": self.is_up,
                                   "port": self.port, "control_port": self.control_port,
                                   "imdsv2": self.imdsv2})
            if p == "/_fake/log" and m == "GET":
                return reply(200, self.request_log())
            if p == "/_fake/log" and m == "DELETE":
                self.clear_log()
                return reply(200, {})
            if p == "/_fake/faults" and m == "GET":
                return reply(200, self.faults())
            if p == "/_fake/faults" and m == "POST":
                allowed = {"action", "status", "count", "path", "method", "delay_s", "body", "keep"}
                unknown = set(data) - allowed
                if unknown:
                    return reply(400, {"error": "unknown fields: %s" % sorted(unknown)})
                return reply(200, {"id": self.add_fault(**data)})
            if p == "/_fake/faults" and m == "DELETE":
                self.clear_faults(data.get("id"))
                return reply(200, {})
            if p == "/_fake/down" and m == "POST":
                for_s = data.get("for_s")
                handler.close_connection = True
                if handler.server.control_only:
                    self.go_down(for_s)
                else:
                    self.go_down(for_s, _exclude=handler.connection)
                return reply(200, {"up": False, "for_s": for_s})
            if p == "/_fake/up" and m == "POST":
                self.come_up()
                return reply(200, {"up": True})
            if p == "/_fake/expire-tokens" and m == "POST":
                self.expire_tokens()
                return reply(200, {})
            if p == "/_fake/imdsv2" and m == "POST":
                self.set_imdsv2(data.get("mode"))
                return reply(200, {"imdsv2": self.imdsv2})
            if p == "/_fake/identity" and m == "GET":
                return reply(200, self.identity_snapshot())
            if p == "/_fake/identity" and m in ("PUT", "PATCH"):
                self.set_identity(data, merge=(m == "PATCH"))
                return reply(200, self.identity_snapshot())
        except (TypeError, ValueError) as e:
            return reply(400, {"error": str(e)})
        return reply(404, {"error": "no control endpoint %s %s" % (m, p)})


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description="Fake instance metadata service.")
    ap.add_argument("--dialect", required=True, choices=DIALECTS)
    ap.add_argument("--identity", help="JSON file merged over identities/<dialect>.json")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--control-port", type=int, default=None,
                    help="also serve /_fake/ on this port, which stays up while the "
                         "service is down (0 picks a free port)")
    ap.add_argument("--log-file", help="append one JSON line per answered request")
    ap.add_argument("--imdsv2", choices=("required", "optional"), default="required")
    ap.add_argument("--azure-rate-limit", action="store_true")
    args = ap.parse_args(argv)

    fake = FakeMetadata(args.dialect, args.identity, port=args.port, host=args.host,
                        log_file=args.log_file, imdsv2=args.imdsv2,
                        azure_rate_limit=args.azure_rate_limit,
                        control_port=args.control_port)
    fake.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    signal.signal(signal.SIGUSR1, lambda *a: threading.Thread(target=fake.go_down).start())
    signal.signal(signal.SIGUSR2, lambda *a: threading.Thread(target=fake.come_up).start())
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % fake.port)
        os.replace(tmp, args.port_file)
    msg = "fake-metadata %s listening on %s" % (args.dialect, fake.url)
    if fake.control_port is not None:
        msg += " (control port %d)" % fake.control_port
    print(msg, flush=True)
    while not done.wait(0.5):
        pass
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
