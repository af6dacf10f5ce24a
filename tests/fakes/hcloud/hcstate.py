"""State and semantics of the fake Hetzner Cloud API.

Everything here is transport-free: the HTTP layer (fakehcloud.py) parses a
request, calls one State method under State.lock and renders what it returns;
a refused request raises ApiError (status, code, message, details), which the
HTTP layer turns into the error envelope.

Resources are kept in an internal shape and rendered into the API's JSON
shape on every read, so derived fields (a network's servers, a server's load
balancers, label-selector targets) are always current.

Actions: every asynchronous operation creates an Action that is `running`
for `seconds` (State.action_seconds unless a script says otherwise) and then
ends in `success` -- its change to the resources is applied at that moment --
or in `error` (a scripted failure; nothing changes).  Actions end lazily:
advance() runs at the start of every request and of every inspection helper.
While an action runs, its load balancer is locked (423 `locked` for further
changes) and its network refuses route changes (409 `conflict`).
"""

import copy
import datetime
import ipaddress
import itertools
import threading
import time

import hclabels

INCLUDED_TRAFFIC = 21990232555520  # 20 TiB, what the API reports today

# id, name, description, country, city, latitude, longitude, network_zone,
# and the legacy datacenter (id, name, description) of the pre-2026-07
# `datacenter` object (served only with legacy_datacenter)
LOCATIONS = [
    (1, "fsn1", "Falkenstein DC Park 1", "DE", "Falkenstein", 50.47612,
     12.370071, "eu-central", (4, "fsn1-dc14", "Falkenstein 1 virtual DC 14")),
    (2, "nbg1", "Nuremberg DC Park 1", "DE", "Nuremberg", 49.452102,
     11.076665, "eu-central", (2, "nbg1-dc3", "Nuremberg 1 virtual DC 3")),
    (3, "hel1", "Helsinki DC Park 1", "FI", "Helsinki", 60.169855,
     24.938379, "eu-central", (3, "hel1-dc2", "Helsinki 1 virtual DC 2")),
    (4, "ash", "Ashburn, VA", "US", "Ashburn, VA", 39.045821, -77.487073,
     "us-east", (5, "ash-dc1", "Ashburn virtual DC 1")),
    (5, "hil", "Hillsboro, OR", "US", "Hillsboro, OR", 45.54222,
     -122.951924, "us-west", (6, "hil-dc1", "Hillsboro virtual DC 1")),
    (6, "sin", "Singapore", "SG", "Singapore", 1.283333, 103.833333,
     "ap-southeast", (7, "sin-dc1", "Singapore virtual DC 1")),
]

# id, name, description, cores, memory (GB), disk (GB), cpu_type, architecture
SERVER_TYPES = [
    (22, "cpx11", "CPX 11", 2, 2.0, 40, "shared", "x86"),
    (23, "cpx21", "CPX 21", 3, 4.0, 80, "shared", "x86"),
    (45, "cax11", "CAX11", 2, 4.0, 40, "shared", "arm"),
    (96, "ccx13", "CCX13 Dedicated CPU", 2, 8.0, 80, "dedicated", "x86"),
    (104, "cx22", "CX22", 2, 4.0, 40, "shared", "x86"),
    (105, "cx32", "CX32", 4, 8.0, 80, "shared", "x86"),
]

# id, name, max_connections, max_services, max_targets,
# max_assigned_certificates (the published LB11/LB21/LB31 limits)
LB_TYPES = [
    (1, "lb11", 10000, 5, 25, 10),
    (2, "lb21", 20000, 15, 75, 25),
    (3, "lb31", 40000, 30, 150, 50),
]

SERVER_STATUSES = ("running", "initializing", "starting", "stopping", "off",
                   "deleting", "migrating", "rebuilding", "unknown")
RFC1918 = [ipaddress.ip_network(n) for n in
           ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]
PUBLIC_GATEWAY = ipaddress.ip_address("172.31.1.1")


def iso(t):
    """RFC 3339 with a +00:00 offset, as the API writes timestamps."""
    if t is None:
        return None
    return datetime.datetime.fromtimestamp(
        t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")


class ApiError(Exception):
    """A refused request: HTTP status, error code, message, details."""

    def __init__(self, status, code, message, details=None, headers=None):
        Exception.__init__(self, "%d %s: %s" % (status, code, message))
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self):
        return {"error": {"code": self.code, "message": self.message,
                          "details": self.details}}


def invalid(field, msg):
    return ApiError(422, "invalid_input",
                    "invalid input in field '%s': %s" % (field, msg),
                    {"fields": [{"name": field, "messages": [msg]}]})


def not_found(kind, rid):
    return ApiError(404, "not_found",
                    "%s with ID '%s' not found" % (kind, rid))


def unprocessable(code, message):
    return ApiError(422, code, message)


def limit_exceeded(name, message):
    return ApiError(403, "resource_limit_exceeded", message,
                    {"limits": [{"name": name}]})


# -- body field helpers ---------------------------------------------------

_MISSING = object()


def _field(body, key, kind, field=None, required=False, default=None,
           lo=None, hi=None, choices=None, nullable=False):
    field = field or key
    v = body.get(key, _MISSING) if isinstance(body, dict) else _MISSING
    if v is _MISSING or (v is None and not nullable):
        if required:
            raise invalid(field, "is required")
        return default
    if v is None:
        return None
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise invalid(field, "must be an integer")
        if lo is not None and v < lo:
            raise invalid(field, "must be at least %d" % lo)
        if hi is not None and v > hi:
            raise invalid(field, "must be at most %d" % hi)
    elif kind is bool:
        if not isinstance(v, bool):
            raise invalid(field, "must be a boolean")
    elif kind is str:
        if not isinstance(v, str):
            raise invalid(field, "must be a string")
    elif kind is dict:
        if not isinstance(v, dict):
            raise invalid(field, "must be an object")
    elif kind is list:
        if not isinstance(v, list):
            raise invalid(field, "must be an array")
    elif kind is object:  # an ID or a name
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise invalid(field, "must be an ID or a name")
    if choices is not None and v not in choices:
        raise invalid(field, "must be one of %s" % ", ".join(choices))
    return v


def _ip(text, field):
    try:
        return ipaddress.ip_address(text)
    except (ValueError, TypeError):
        raise invalid(field, "is not a valid IP address")


class _Script(object):
    """How the next matching action behaves (State.script_action)."""

    def __init__(self, command, seconds, error, halfway, never, count):
        self.command = command
        self.seconds = seconds
        self.error = error
        self.halfway = halfway
        self.never = never
        self.count = count


class State(object):
    def __init__(self, action_seconds=0.0, legacy_datacenter=False,
                 max_routes=100, default_health="healthy", clock=time.time):
        self.lock = threading.RLock()
        self.clock = clock
        self.action_seconds = float(action_seconds)
        self.legacy_datacenter = bool(legacy_datacenter)
        self.max_routes = int(max_routes)
        self.default_health = default_health
        self.servers = {}
        self.networks = {}
        self.lbs = {}
        self.actions = {}
        self._act = {}  # action id -> internal run data
        self.robot_ips = set()
        self._scripts = []
        self._reserved = set()  # private IPs promised to running attaches
        self._next = {"server": itertools.count(100001),
                      "load_balancer": itertools.count(200001),
                      "network": itertools.count(300001),
                      "action": itertools.count(1),
                      "primary_ip": itertools.count(500001)}
        self._pub4 = itertools.count(10)
        self._lb4 = itertools.count(10)
        self._pub6 = itertools.count(1)
        self._lb6 = itertools.count(1)
        self.locations = {}
        for (lid, name, desc, country, city, lat, lon, zone, dc) in LOCATIONS:
            self.locations[name] = {
                "id": lid, "name": name, "description": desc,
                "country": country, "city": city, "latitude": lat,
                "longitude": lon, "network_zone": zone}
        self._legacy_dc = {loc[1]: loc[8] for loc in LOCATIONS}
        self.server_types = {}
        for (tid, name, desc, cores, mem, disk, cpu, arch) in SERVER_TYPES:
            self.server_types[name] = {
                "id": tid, "name": name, "description": desc,
                "cores": cores, "memory": mem, "disk": disk,
                "deprecated": False, "deprecation": None, "prices": [],
                "storage_type": "local", "cpu_type": cpu,
                "architecture": arch}
        self.lb_types = {}
        for (tid, name, conns, svcs, tgts, certs) in LB_TYPES:
            self.lb_types[name] = {
                "id": tid, "name": name, "description": name.upper(),
                "max_connections": conns, "max_services": svcs,
                "max_targets": tgts, "max_assigned_certificates": certs,
                "deprecated": None, "prices": []}

    # -- ids, time, lookups ------------------------------------------------

    def _id(self, kind):
        return next(self._next[kind])

    def _bump(self, kind, rid):
        """Keep the counter of kind past an explicitly chosen id."""
        n = next(self._next[kind])
        if rid >= n:
            self._next[kind] = itertools.count(rid + 1)
        else:
            self._next[kind] = itertools.count(n)

    def _location(self, key, field="location"):
        for loc in self.locations.values():
            if key == loc["name"] or key == loc["id"]:
                return loc
        raise invalid(field, "location %r not found" % (key,))

    def _lb_type(self, key, field="load_balancer_type"):
        for t in self.lb_types.values():
            if key == t["name"] or key == t["id"]:
                return t
        raise invalid(field, "load balancer type %r not found" % (key,))

    def _server(self, sid):
        s = self.servers.get(sid)
        if s is None:
            raise not_found("server", sid)
        return s

    def _network(self, nid):
        n = self.networks.get(nid)
        if n is None:
            raise not_found("network", nid)
        return n

    def _lb(self, lid):
        lb = self.lbs.get(lid)
        if lb is None:
            raise not_found("load_balancer", lid)
        return lb

    # -- actions -----------------------------------------------------------

    def script_action(self, command=None, seconds=None, error=None,
                      halfway=False, never=False, count=1):
        """The next `count` actions (None = all) with this command (None =
        any) run `seconds` (default: action_seconds), then fail with
        `error` -- a (code, message) pair, or True for
        ("action_failed", "Action failed") -- at progress 0 (or 50 with
        halfway=True), or succeed when error is None; never=True: they stay
        running until finish_action()."""
        if error is True:
            error = ("action_failed", "Action failed")
        with self.lock:
            self._scripts.append(_Script(command, seconds, error, halfway,
                                         never, count))

    def clear_action_scripts(self):
        with self.lock:
            self._scripts = []

    def _take_script(self, command):
        for s in self._scripts:
            if s.count is not None and s.count <= 0:
                continue
            if s.command is None or s.command == command:
                if s.count is not None:
                    s.count -= 1
                return s
        return None

    def _new_action(self, command, resources, apply=None, lock=None,
                    on_end=None):
        now = self.clock()
        aid = self._id("action")
        sc = self._take_script(command)
        seconds = self.action_seconds
        if sc is not None and sc.seconds is not None:
            seconds = float(sc.seconds)
        self.actions[aid] = {
            "id": aid, "command": command, "status": "running", "progress": 0,
            "started": iso(now), "finished": None,
            "resources": [{"id": r, "type": t} for (t, r) in resources],
            "error": None}
        self._act[aid] = {
            "start": now, "seconds": seconds,
            "error": sc.error if sc else None,
            "halfway": bool(sc and sc.halfway), "never": bool(sc and sc.never),
            "apply": apply, "lock": lock, "on_end": on_end}
        return aid

    def advance(self):
        """End every running action whose time has come (oldest first)."""
        with self.lock:
            now = self.clock()
            for aid in sorted(self._act):
                run = self._act[aid]
                if run["never"] or now < run["start"] + run["seconds"]:
                    continue
                self._end_action(aid, run["error"],
                                 run["start"] + run["seconds"])

    def finish_action(self, aid, error=None):
        """End a running action now: success (applying its change), or an
        error when error is a (code, message) pair or True."""
        if error is True:
            error = ("action_failed", "Action failed")
        with self.lock:
            if aid not in self._act:
                raise KeyError("action %d is not running" % aid)
            self._end_action(aid, error)

    def _end_action(self, aid, error, when=None):
        run = self._act.pop(aid)
        a = self.actions[aid]
        a["finished"] = iso(when if when is not None else self.clock())
        if error is None:
            if run["apply"] is not None:
                run["apply"]()
            a["status"] = "success"
            a["progress"] = 100
        else:
            a["status"] = "error"
            a["progress"] = 50 if run["halfway"] else 0
            a["error"] = {"code": error[0], "message": error[1]}
        if run["on_end"] is not None:
            run["on_end"]()

    def _locked_by(self, lock):
        for run in self._act.values():
            if run["lock"] == lock:
                return True
        return False

    def render_action(self, aid):
        a = dict(self.actions[aid])
        run = self._act.get(aid)
        if run is not None:
            if run["never"] or run["seconds"] <= 0:
                p = 0
            else:
                p = int(100 * (self.clock() - run["start"]) / run["seconds"])
                p = max(0, min(p, 50 if run["halfway"] else 99))
            a["progress"] = p
        a["resources"] = [dict(r) for r in a["resources"]]
        a["error"] = dict(a["error"]) if a["error"] else None
        return a

    def actions_for(self, kind, rid):
        return [self.render_action(aid) for aid in sorted(self.actions)
                if {"id": rid, "type": kind} in self.actions[aid]["resources"]]

    # -- servers -----------------------------------------------------------

    def add_server(self, name=None, id=None, status="running",
                   location="fsn1", server_type="cx22", public_ipv4=True,
                   public_ipv6=True, private_net=(), labels=None,
                   created=None, image="debian-12", locked=False):
        """Seed a server.  public_ipv4/public_ipv6: True (allocate), an
        address (IPv6: the /64), or None (none).  private_net: network ids
        or {"network": id, "ip": "10.0.0.5", "alias_ips": [...]} (ip
        allocated when absent).  Returns the rendered server."""
        with self.lock:
            sid = int(id) if id is not None else self._id("server")
            if id is not None:
                self._bump("server", sid)
            if sid in self.servers:
                raise ValueError("server %d exists" % sid)
            name = name or "server-%d" % sid
            if any(s["name"] == name for s in self.servers.values()):
                raise ValueError("server name %r exists" % name)
            if status not in SERVER_STATUSES:
                raise ValueError("bad server status %r" % status)
            if location not in self.locations:
                raise ValueError("unknown location %r" % location)
            if server_type not in self.server_types:
                raise ValueError("unknown server type %r" % server_type)
            s = {"id": sid, "name": name, "status": status,
                 "created": created if created is not None else self.clock(),
                 "server_type": server_type, "location": location,
                 "ipv4": None, "ipv4_id": None, "ipv6": None,
                 "ipv6_id": None, "private_net": [],
                 "labels": dict(labels or {}), "image": image,
                 "locked": bool(locked),
                 "protection": {"delete": False, "rebuild": False}}
            self._set_public(s, public_ipv4, public_ipv6)
            for pn in private_net:
                self._attach_server(s, pn)
            self.servers[sid] = s
            return self.render_server(sid)

    def _set_public(self, s, v4, v6):
        if v4 is not _KEEP:
            if v4 is True:
                v4 = str(ipaddress.ip_address("198.18.0.0") + next(self._pub4))
            if v4:
                s["ipv4"] = str(ipaddress.IPv4Address(v4))
                s["ipv4_id"] = s["ipv4_id"] or self._id("primary_ip")
            else:
                s["ipv4"] = s["ipv4_id"] = None
        if v6 is not _KEEP:
            if v6 is True:
                v6 = "2001:db8:%x::/64" % next(self._pub6)
            if v6:
                s["ipv6"] = str(ipaddress.IPv6Network(v6))
                s["ipv6_id"] = s["ipv6_id"] or self._id("primary_ip")
            else:
                s["ipv6"] = s["ipv6_id"] = None

    def _attach_server(self, s, pn):
        if isinstance(pn, int):
            pn = {"network": pn}
        nid = int(pn["network"])
        net = self.networks.get(nid)
        if net is None:
            raise ValueError("network %d does not exist" % nid)
        ip = pn.get("ip")
        if ip is None:
            zone = self.locations[s["location"]]["network_zone"]
            ip = self._alloc_private(net, zone, any_zone=True)
            if ip is None:
                raise ValueError("network %d has no free address" % nid)
        mac = pn.get("mac_address") or "86:00:00:%02x:%02x:%02x" % (
            (s["id"] >> 16) & 0xff, (s["id"] >> 8) & 0xff,
            (s["id"] + len(s["private_net"])) & 0xff)
        s["private_net"].append({
            "network": nid, "ip": str(ipaddress.IPv4Address(ip)),
            "alias_ips": list(pn.get("alias_ips", [])), "mac_address": mac})

    def update_server(self, sid, **changes):
        """Change a seeded server: name, status, labels, location,
        server_type, public_ipv4, public_ipv6 (as in add_server), private_net
        (replaces the list), locked.  Returns the rendered server."""
        with self.lock:
            s = self.servers[sid]
            if "public_ipv4" in changes or "public_ipv6" in changes:
                self._set_public(s, changes.pop("public_ipv4", _KEEP),
                                 changes.pop("public_ipv6", _KEEP))
            if "private_net" in changes:
                s["private_net"] = []
                for pn in changes.pop("private_net"):
                    self._attach_server(s, pn)
            for k, v in changes.items():
                if k == "status" and v not in SERVER_STATUSES:
                    raise ValueError("bad server status %r" % v)
                if k not in ("name", "status", "labels", "location",
                             "server_type", "locked", "image"):
                    raise ValueError("cannot change %r" % k)
                s[k] = v
            return self.render_server(sid)

    def remove_server(self, sid):
        """Delete a server at once (no action); LB targets naming it stay,
        as the API keeps them until removed."""
        with self.lock:
            del self.servers[sid]

    def render_server(self, sid, targeting=None):
        """targeting: _targeting()'s map, when rendering many servers."""
        s = self.servers[sid]
        loc = dict(self.locations[s["location"]])
        pub4 = None
        if s["ipv4"]:
            rev = ".".join(reversed(s["ipv4"].split(".")))
            pub4 = {"id": s["ipv4_id"], "ip": s["ipv4"], "blocked": False,
                    "dns_ptr": "static.%s.clients.your-server.de" % rev}
        pub6 = None
        if s["ipv6"]:
            pub6 = {"id": s["ipv6_id"], "ip": s["ipv6"], "blocked": False,
                    "dns_ptr": []}
        st = dict(self.server_types[s["server_type"]])
        out = {
            "id": s["id"], "name": s["name"], "status": s["status"],
            "created": iso(s["created"]),
            "public_net": {"ipv4": pub4, "ipv6": pub6, "floating_ips": [],
                           "firewalls": []},
            "private_net": [dict(p, alias_ips=list(p["alias_ips"]))
                            for p in s["private_net"]],
            "server_type": st,
            "location": loc,
            "image": _image(s["image"], st["architecture"]),
            "iso": None, "rescue_enabled": False, "locked": s["locked"],
            "backup_window": None, "outgoing_traffic": 0,
            "ingoing_traffic": 0, "included_traffic": INCLUDED_TRAFFIC,
            "protection": dict(s["protection"]),
            "labels": dict(s["labels"]), "volumes": [],
            "load_balancers": (self._lbs_targeting(sid) if targeting is None
                               else list(targeting.get(sid, ()))),
            "primary_disk_size": st["disk"], "placement_group": None,
        }
        if self.legacy_datacenter:
            dcid, dcname, dcdesc = self._legacy_dc[s["location"]]
            out["datacenter"] = {
                "id": dcid, "name": dcname, "description": dcdesc,
                "location": dict(loc),
                "server_types": {
                    "supported": [t["id"] for t in self.server_types.values()],
                    "available": [t["id"] for t in self.server_types.values()],
                    "available_for_migration": [
                        t["id"] for t in self.server_types.values()]}}
        return out

    def list_servers(self, name=None, selector=None, statuses=None):
        with self.lock:
            out, targeting = [], None
            for sid in sorted(self.servers):
                s = self.servers[sid]
                if name is not None and s["name"] != name:
                    continue
                if selector is not None and not selector.matches(s["labels"]):
                    continue
                if statuses and s["status"] not in statuses:
                    continue
                if targeting is None:
                    targeting = self._targeting()
                out.append(self.render_server(sid, targeting))
            return out

    def get_server(self, sid):
        with self.lock:
            self._server(sid)
            return self.render_server(sid)

    def put_server(self, sid, body):
        """PUT /servers/{id}: name (unique, non-empty) and labels (replaced
        whole), as the API's "Update a Server"; 423 locked while an action
        runs on it."""
        with self.lock:
            s = self._server(sid)
            if self._locked_by(("server", sid)):
                raise ApiError(423, "locked", "server is locked")
            name = _field(body, "name", str)
            labels = _field(body, "labels", dict)
            if name is not None:
                if not name:
                    raise invalid("name", "must not be empty")
                for other in self.servers.values():
                    if other["name"] == name and other["id"] != sid:
                        raise ApiError(409, "uniqueness_error",
                                       "name is already used",
                                       {"fields": [{"name": "name"}]})
            if labels is not None:
                self._check_labels(labels)
            if name is not None:
                s["name"] = name
            if labels is not None:
                s["labels"] = dict(labels)
            return self.render_server(sid)

    def delete_server(self, sid):
        with self.lock:
            s = self._server(sid)
            if s["protection"]["delete"]:
                raise ApiError(423, "protected", "server is delete protected")
            if self._locked_by(("server", sid)):
                raise ApiError(423, "locked", "server is locked")

            def apply():
                self.servers.pop(sid, None)
            return self.render_action(self._new_action(
                "delete_server", [("server", sid)], apply, ("server", sid)))

    # -- networks ----------------------------------------------------------

    def add_network(self, name=None, ip_range="10.0.0.0/8", subnets=None,
                    routes=(), id=None, labels=None, network_zone="eu-central",
                    expose_routes_to_vswitch=False, created=None):
        """Seed a network.  subnets: [{"ip_range": "10.0.0.0/24", "type":
        "cloud", "network_zone": "eu-central"}] (default: one cloud subnet,
        the first /24 of ip_range, in network_zone); gateways are the first
        address of ip_range.  routes: [{"destination", "gateway"}]."""
        with self.lock:
            nid = int(id) if id is not None else self._id("network")
            if id is not None:
                self._bump("network", nid)
            if nid in self.networks:
                raise ValueError("network %d exists" % nid)
            name = name or "network-%d" % nid
            if any(n["name"] == name for n in self.networks.values()):
                raise ValueError("network name %r exists" % name)
            rng = ipaddress.IPv4Network(ip_range)
            gw = str(rng.network_address + 1)
            if subnets is None:
                first = rng if rng.prefixlen >= 24 else next(rng.subnets(
                    new_prefix=24))
                subnets = [{"ip_range": str(first)}]
            subs = []
            for sn in subnets:
                r = ipaddress.IPv4Network(sn["ip_range"])
                if not r.subnet_of(rng):
                    raise ValueError("subnet %s not in %s" % (r, rng))
                subs.append({"type": sn.get("type", "cloud"),
                             "ip_range": str(r),
                             "network_zone": sn.get("network_zone",
                                                    network_zone),
                             "gateway": gw})
                if sn.get("vswitch_id") is not None:
                    subs[-1]["vswitch_id"] = sn["vswitch_id"]
            n = {"id": nid, "name": name, "ip_range": str(rng),
                 "subnets": subs,
                 "routes": [{"destination": r["destination"],
                             "gateway": r["gateway"]} for r in routes],
                 "labels": dict(labels or {}),
                 "created": created if created is not None else self.clock(),
                 "protection": {"delete": False},
                 "expose_routes_to_vswitch": bool(expose_routes_to_vswitch)}
            self.networks[nid] = n
            return self.render_network(nid)

    def render_network(self, nid):
        n = self.networks[nid]
        return {
            "id": n["id"], "name": n["name"], "ip_range": n["ip_range"],
            "subnets": [dict(s) for s in n["subnets"]],
            "routes": [dict(r) for r in n["routes"]],
            "servers": [sid for sid in sorted(self.servers)
                        if any(p["network"] == nid for p in
                               self.servers[sid]["private_net"])],
            "load_balancers": [lid for lid in sorted(self.lbs)
                               if any(p["network"] == nid for p in
                                      self.lbs[lid]["private_net"])],
            "protection": dict(n["protection"]),
            "labels": dict(n["labels"]),
            "created": iso(n["created"]),
            "expose_routes_to_vswitch": n["expose_routes_to_vswitch"]}

    def list_networks(self, name=None, selector=None):
        with self.lock:
            return [self.render_network(nid) for nid in sorted(self.networks)
                    if (name is None or self.networks[nid]["name"] == name)
                    and (selector is None or
                         selector.matches(self.networks[nid]["labels"]))]

    def get_network(self, nid):
        with self.lock:
            self._network(nid)
            return self.render_network(nid)

    def _used_private(self, nid):
        used = set(self._reserved)
        for s in self.servers.values():
            for p in s["private_net"]:
                if p["network"] == nid:
                    used.add(p["ip"])
                    used.update(p["alias_ips"])
        for lb in self.lbs.values():
            for p in lb["private_net"]:
                if p["network"] == nid:
                    used.add(p["ip"])
        return used

    def _alloc_private(self, net, zone, ip_range=None, any_zone=False):
        """A free address in a cloud subnet of net in zone, or None."""
        used = self._used_private(net["id"])
        gw = ipaddress.IPv4Network(net["ip_range"]).network_address + 1
        for sn in net["subnets"]:
            if sn["type"] != "cloud":
                continue
            if not any_zone and sn["network_zone"] != zone:
                continue
            if ip_range is not None and sn["ip_range"] != ip_range:
                continue
            r = ipaddress.IPv4Network(sn["ip_range"])
            for h in r.hosts():
                # the subnet's first host is left out, like the gateway
                if h == gw or h <= r.network_address + 1:
                    continue
                if str(h) not in used:
                    return str(h)
        return None

    def _route_change(self, nid, body, add):
        net = self._network(nid)
        if self._locked_by(("network", nid)):
            raise ApiError(409, "conflict",
                           "network %d is being changed, please retry" % nid)
        dest_s = _field(body, "destination", str, required=True)
        gw_s = _field(body, "gateway", str, required=True)
        try:
            dest = ipaddress.IPv4Network(dest_s)
        except ValueError:
            raise invalid("destination", "is not a valid IPv4 network")
        gw = _ip(gw_s, "gateway")
        key = {"destination": str(dest), "gateway": str(gw)}
        if not add:
            if key not in net["routes"]:
                raise invalid("destination", "route not found")

            def apply():
                if key in net["routes"]:
                    net["routes"].remove(key)
            return self.render_action(self._new_action(
                "delete_route", [("network", nid)], apply, ("network", nid)))
        rng = ipaddress.IPv4Network(net["ip_range"])
        first = rng.network_address + 1
        if not any(dest.subnet_of(p) for p in RFC1918):
            raise invalid("destination", "must be a private (RFC 1918) range")
        if first in dest or PUBLIC_GATEWAY in dest:
            raise invalid("destination", "must not contain %s or %s"
                          % (first, PUBLIC_GATEWAY))
        for sn in net["subnets"]:
            if dest.overlaps(ipaddress.IPv4Network(sn["ip_range"])):
                raise invalid("destination",
                              "overlaps with subnet %s" % sn["ip_range"])
        for r in net["routes"]:
            if dest.overlaps(ipaddress.IPv4Network(r["destination"])):
                raise invalid("destination", "overlaps with route %s via %s"
                              % (r["destination"], r["gateway"]))
        if gw == first or gw == PUBLIC_GATEWAY:
            raise invalid("gateway", "must not be %s" % gw)
        if gw.version != 4 or gw not in rng:
            raise invalid("gateway", "must be in the network's ip_range")
        for sn in net["subnets"]:
            if sn["type"] == "vswitch" and gw in ipaddress.IPv4Network(
                    sn["ip_range"]):
                raise invalid("gateway", "must not be behind a vSwitch")
        if len(net["routes"]) >= self.max_routes:
            raise limit_exceeded(
                "routes", "network %d already has the maximum of %d routes"
                % (nid, self.max_routes))

        def apply():
            net["routes"].append(key)
        return self.render_action(self._new_action(
            "add_route", [("network", nid)], apply, ("network", nid)))

    def add_route(self, nid, body):
        with self.lock:
            return self._route_change(nid, body, True)

    def delete_route(self, nid, body):
        with self.lock:
            return self._route_change(nid, body, False)

    # -- load balancers ------------------------------------------------------

    def add_robot_ip(self, ip):
        """Make ip an address the project owns (valid `ip` target)."""
        with self.lock:
            self.robot_ips.add(str(ipaddress.ip_address(ip)))

    def _lbs_targeting(self, sid):
        return self._targeting().get(sid, [])

    def _targeting(self):
        """{server id: [ids of the load balancers targeting it, ascending]},
        label selectors resolved once per balancer (a listing of N servers
        would otherwise resolve every selector N times)."""
        out = {}
        for lid in sorted(self.lbs):
            lb = self.lbs[lid]
            hit = set()
            for t in lb["targets"]:
                if t["type"] == "server":
                    hit.add(t["server"])
                elif t["type"] == "label_selector":
                    hit.update(self._resolve(lb, t))
            for sid in hit:
                out.setdefault(sid, []).append(lid)
        return out

    def _resolve(self, lb, t):
        """Server ids a label_selector target currently selects."""
        sel = hclabels.parse(t["selector"])
        nets = {p["network"] for p in lb["private_net"]}
        out = []
        for sid in sorted(self.servers):
            s = self.servers[sid]
            if not sel.matches(s["labels"]):
                continue
            if t["use_private_ip"]:
                if not any(p["network"] in nets for p in s["private_net"]):
                    continue
            elif not s["ipv4"]:
                continue
            out.append(sid)
        return out

    def _health(self, lb, key):
        return [{"listen_port": svc["listen_port"],
                 "status": lb["health"].get((key, svc["listen_port"]),
                                            self.default_health)}
                for svc in lb["services"]]

    def render_lb(self, lid):
        lb = self.lbs[lid]
        targets = []
        for t in lb["targets"]:
            if t["type"] == "server":
                targets.append({"type": "server",
                                "server": {"id": t["server"]},
                                "use_private_ip": t["use_private_ip"],
                                "health_status": self._health(
                                    lb, ("server", t["server"]))})
            elif t["type"] == "ip":
                targets.append({"type": "ip", "ip": {"ip": t["ip"]},
                                "use_private_ip": False,
                                "health_status": self._health(
                                    lb, ("ip", t["ip"]))})
            else:
                targets.append({
                    "type": "label_selector",
                    "label_selector": {"selector": t["selector"]},
                    "use_private_ip": t["use_private_ip"],
                    "health_status": [],
                    "targets": [{"type": "server", "server": {"id": sid},
                                 "use_private_ip": t["use_private_ip"],
                                 "health_status": self._health(
                                     lb, ("server", sid))}
                                for sid in self._resolve(lb, t)]})
        return {
            "id": lb["id"], "name": lb["name"],
            "public_net": {"enabled": lb["public_enabled"],
                           "ipv4": {"ip": lb["ipv4"],
                                    "dns_ptr": lb["ipv4_ptr"]},
                           "ipv6": {"ip": lb["ipv6"],
                                    "dns_ptr": lb["ipv6_ptr"]}},
            "private_net": [dict(p) for p in lb["private_net"]],
            "location": dict(self.locations[lb["location"]]),
            "load_balancer_type": dict(self.lb_types[lb["type"]]),
            "protection": {"delete": lb["protection_delete"]},
            "labels": dict(lb["labels"]),
            "targets": targets,
            "services": copy.deepcopy(lb["services"]),
            "algorithm": {"type": lb["algorithm"]},
            "outgoing_traffic": 0, "ingoing_traffic": 0,
            "included_traffic": INCLUDED_TRAFFIC,
            "created": iso(lb["created"]),
        }

    def list_lbs(self, name=None, selector=None):
        with self.lock:
            return [self.render_lb(lid) for lid in sorted(self.lbs)
                    if (name is None or self.lbs[lid]["name"] == name)
                    and (selector is None or
                         selector.matches(self.lbs[lid]["labels"]))]

    def get_lb(self, lid):
        with self.lock:
            self._lb(lid)
            return self.render_lb(lid)

    def _check_name(self, name, lid=None):
        if not name:
            raise invalid("name", "must not be empty")
        for other in self.lbs.values():
            if other["name"] == name and other["id"] != lid:
                raise ApiError(409, "uniqueness_error",
                               "name is already used",
                               {"fields": [{"name": "name"}]})

    def _check_labels(self, labels):
        e = hclabels.labels_error(labels)
        if e:
            raise invalid("labels", e)

    def _check_unlocked(self, lid):
        if self._locked_by(("load_balancer", lid)):
            raise ApiError(423, "locked",
                           "load balancer %d is locked (an action is running)"
                           % lid)

    def _service(self, body, field="services", existing=None):
        """Validate a service (add_service/create; or update_service with
        existing) and return it normalized."""
        upd = existing is not None
        protocol = _field(body, "protocol", str, field + ".protocol",
                          required=not upd,
                          choices=("tcp", "http", "https"))
        if upd and protocol is None:
            protocol = existing["protocol"]
        if protocol == "tcp":
            lp_default = dp_default = None
        else:
            lp_default = 443 if protocol == "https" else 80
            dp_default = 80
        listen = _field(body, "listen_port", int, field + ".listen_port",
                        required=(protocol == "tcp" or upd), lo=1, hi=65535,
                        default=lp_default)
        if upd:
            dp_default = existing["destination_port"]
        dest = _field(body, "destination_port", int,
                      field + ".destination_port",
                      required=(protocol == "tcp" and not upd), lo=1,
                      hi=65535, default=dp_default)
        pp = _field(body, "proxyprotocol", bool, field + ".proxyprotocol",
                    default=existing["proxyprotocol"] if upd else False)
        old_hc = existing["health_check"] if upd else {}
        hc_in = _field(body, "health_check", dict, field + ".health_check",
                       default={})
        hcp = _field(hc_in, "protocol", str, field + ".health_check.protocol",
                     default=old_hc.get("protocol", "tcp" if protocol == "tcp"
                                        else "http"),
                     choices=("tcp", "http"))
        hc = {"protocol": hcp,
              "port": _field(hc_in, "port", int, field + ".health_check.port",
                             lo=1, hi=65535,
                             default=old_hc.get("port", dest)),
              "interval": _field(hc_in, "interval", int,
                                 field + ".health_check.interval", lo=3,
                                 hi=60, default=old_hc.get("interval", 15)),
              "timeout": _field(hc_in, "timeout", int,
                                field + ".health_check.timeout", lo=1,
                                hi=60, default=old_hc.get("timeout", 10)),
              "retries": _field(hc_in, "retries", int,
                                field + ".health_check.retries", lo=0,
                                hi=5, default=old_hc.get("retries", 3))}
        if hcp == "http":
            old = old_hc.get("http") or {
                "domain": None, "path": "/", "response": "",
                "status_codes": ["2??", "3??"], "tls": False}
            hh = _field(hc_in, "http", dict, field + ".health_check.http",
                        default={})
            f = field + ".health_check.http."
            hc["http"] = {
                "domain": _field(hh, "domain", str, f + "domain",
                                 nullable=True, default=old["domain"]),
                "path": _field(hh, "path", str, f + "path",
                               default=old["path"]),
                "response": _field(hh, "response", str, f + "response",
                                   default=old["response"]),
                "status_codes": _field(hh, "status_codes", list,
                                       f + "status_codes",
                                       default=old["status_codes"]),
                "tls": _field(hh, "tls", bool, f + "tls",
                              default=old["tls"])}
        svc = {"protocol": protocol, "listen_port": listen,
               "destination_port": dest, "proxyprotocol": pp,
               "health_check": hc}
        if protocol != "tcp":
            old = (existing or {}).get("http") or {
                "cookie_name": "HCLBSTICKY", "cookie_lifetime": 300,
                "certificates": [], "redirect_http": False,
                "sticky_sessions": False, "timeout_idle": 60}
            h = _field(body, "http", dict, field + ".http", default={})
            f = field + ".http."
            certs = _field(h, "certificates", list, f + "certificates",
                           default=old["certificates"])
            if protocol == "https" and not certs:
                raise invalid(f + "certificates",
                              "https services need a certificate")
            svc["http"] = {
                "cookie_name": _field(h, "cookie_name", str, f + "cookie_name",
                                      default=old["cookie_name"]),
                "cookie_lifetime": _field(h, "cookie_lifetime", int,
                                          f + "cookie_lifetime", lo=1,
                                          default=old["cookie_lifetime"]),
                "certificates": certs,
                "redirect_http": _field(h, "redirect_http", bool,
                                        f + "redirect_http",
                                        default=old["redirect_http"]),
                "sticky_sessions": _field(h, "sticky_sessions", bool,
                                          f + "sticky_sessions",
                                          default=old["sticky_sessions"]),
                "timeout_idle": _field(h, "timeout_idle", int,
                                       f + "timeout_idle", lo=1,
                                       default=old["timeout_idle"])}
        return svc

    def _add_service_check(self, lb, svc, pending):
        used = _ports(lb["services"] + pending) & _ports([svc])
        if used:
            raise ApiError(412, "source_port_already_used",
                           "source port %d is already used" % min(used))
        limit = self.lb_types[lb["type"]]["max_services"]
        if len(lb["services"]) + len(pending) >= limit:
            raise limit_exceeded(
                "load_balancer_services",
                "load balancer type %s allows at most %d services"
                % (lb["type"], limit))

    def _target(self, lb, body, pending, field="target", removing=False):
        """Validate a target for add_target/create (or remove_target) and
        return it in the internal shape."""
        ttype = _field(body, "type", str, field + ".type", required=True,
                       choices=("server", "label_selector", "ip"))
        upi = False if removing else _field(
            body, "use_private_ip", bool, field + ".use_private_ip",
            default=False)
        if ttype == "server":
            srv = _field(body, "server", dict, field + ".server",
                         required=True)
            sid = _field(srv, "id", int, field + ".server.id", required=True)
            t = {"type": "server", "server": sid, "use_private_ip": upi}
        elif ttype == "label_selector":
            ls = _field(body, "label_selector", dict,
                        field + ".label_selector", required=True)
            sel = _field(ls, "selector", str,
                         field + ".label_selector.selector", required=True)
            try:
                hclabels.parse(sel)
            except ValueError as e:
                raise invalid(field + ".label_selector.selector", str(e))
            t = {"type": "label_selector", "selector": sel,
                 "use_private_ip": upi}
        else:
            ipb = _field(body, "ip", dict, field + ".ip", required=True)
            ip_s = _field(ipb, "ip", str, field + ".ip.ip", required=True)
            t = {"type": "ip", "ip": str(_ip(ip_s, field + ".ip.ip")),
                 "use_private_ip": False}
        if removing:
            return t
        same = [x for x in lb["targets"] + pending if _same_target(x, t)]
        if same:
            raise unprocessable("target_already_defined",
                                "target is already defined")
        nets = {p["network"] for p in lb["private_net"]}
        if t["type"] == "server":
            s = self.servers.get(t["server"])
            if s is None:
                raise not_found("server", t["server"])
            if upi:
                if not nets:
                    raise unprocessable(
                        "load_balancer_not_attached_to_network",
                        "load balancer is not attached to a network")
                if not any(p["network"] in nets for p in s["private_net"]):
                    raise unprocessable(
                        "resolve_cloud_private_targets_error",
                        "server %d is not attached to the network of the "
                        "load balancer" % s["id"])
            else:
                if not lb["public_enabled"]:
                    raise unprocessable(
                        "load_balancer_public_interface_disabled",
                        "the load balancer's public interface is disabled")
                if not s["ipv4"]:
                    raise unprocessable(
                        "resolve_cloud_public_targets_error",
                        "server %d has no public IPv4 address" % s["id"])
        elif t["type"] == "label_selector":
            if upi and not nets:
                raise unprocessable(
                    "load_balancer_not_attached_to_network",
                    "load balancer is not attached to a network")
            if not upi and not lb["public_enabled"]:
                raise unprocessable(
                    "load_balancer_public_interface_disabled",
                    "the load balancer's public interface is disabled")
        else:
            ip = t["ip"]
            if any(s["ipv4"] == ip for s in self.servers.values()):
                raise unprocessable(
                    "cloud_resource_ip_not_allowed",
                    "IP %s belongs to a Hetzner Cloud resource" % ip)
            if ip not in self.robot_ips:
                raise unprocessable("ip_not_owned",
                                    "IP %s is not owned by the project owner"
                                    % ip)
            if any(ipaddress.ip_address(ip) in n for n in RFC1918):
                if not nets:
                    raise unprocessable(
                        "load_balancer_not_attached_to_network",
                        "load balancer is not attached to a network")
            elif not lb["public_enabled"]:
                raise unprocessable(
                    "load_balancer_public_interface_disabled",
                    "the load balancer's public interface is disabled")
        limit = self.lb_types[lb["type"]]["max_targets"]
        if len(lb["targets"]) + len(pending) >= limit:
            raise limit_exceeded(
                "load_balancer_targets",
                "load balancer type %s allows at most %d targets"
                % (lb["type"], limit))
        return t

    def add_load_balancer(self, name=None, load_balancer_type="lb11",
                          location="fsn1", id=None, labels=None,
                          network=None, public_interface=True,
                          services=(), targets=(), algorithm="round_robin"):
        """Seed a load balancer directly (no action; validation applies,
        raising ApiError).  services/targets as in the API's create body."""
        body = {"name": name, "load_balancer_type": load_balancer_type,
                "location": location, "labels": labels or {},
                "public_interface": public_interface,
                "services": list(services), "targets": list(targets),
                "algorithm": {"type": algorithm}}
        if network is not None:
            body["network"] = network
        with self.lock:
            if id is not None:
                lid = int(id)
                self._bump("load_balancer", lid)
            else:
                lid = self._id("load_balancer")
            if name is None:
                body["name"] = "lb-%d" % lid
            return self._create_lb(body, lid, seed=True)[0]

    def create_lb(self, body):
        with self.lock:
            lb, aid = self._create_lb(body)
            return lb, self.render_action(aid)

    def _create_lb(self, body, lid=None, seed=False):
        name = _field(body, "name", str, required=True)
        lbt = self._lb_type(_field(body, "load_balancer_type", object,
                                   required=True))
        loc_key = body.get("location")
        zone = body.get("network_zone")
        if loc_key is not None and zone is not None:
            raise invalid("location",
                          "location and network_zone are mutually exclusive")
        if loc_key is None and zone is None:
            raise invalid("location", "location or network_zone is required")
        if loc_key is not None:
            loc = self._location(loc_key)
        else:
            loc = None
            for lc in LOCATIONS:
                if lc[7] == zone:
                    loc = self.locations[lc[1]]
                    break
            if loc is None:
                raise invalid("network_zone", "unknown network zone %r"
                              % (zone,))
        labels = _field(body, "labels", dict, default={})
        self._check_labels(labels)
        algo = _field(body, "algorithm", dict, default={})
        algo_t = _field(algo, "type", str, "algorithm.type",
                        default="round_robin",
                        choices=("round_robin", "least_connections"))
        public = _field(body, "public_interface", bool, default=True)
        nid = _field(body, "network", int)
        services = _field(body, "services", list, default=[])
        targets = _field(body, "targets", list, default=[])
        if lid is None:
            lid = self._id("load_balancer")
        elif lid in self.lbs:
            raise ValueError("load balancer %d exists" % lid)
        self._check_name(name, lid)
        n = next(self._lb4)
        v4 = str(ipaddress.ip_address("198.19.0.0") + n)
        v6 = "2001:db8:f000:%x::1" % next(self._lb6)
        lb = {"id": lid, "name": name, "type": lbt["name"],
              "location": loc["name"], "algorithm": algo_t,
              "labels": dict(labels), "created": self.clock(),
              "protection_delete": False, "public_enabled": public,
              "ipv4": v4, "ipv4_ptr": _ptr4(v4), "ipv6": v6,
              "ipv6_ptr": "static.%s.clients.your-server.de" % lid,
              "private_net": [], "services": [], "targets": [], "health": {}}
        if nid is not None:
            net = self.networks.get(nid)
            if net is None:
                raise not_found("network", nid)
            ip = self._alloc_private(net, loc["network_zone"])
            if ip is None:
                raise unprocessable(
                    "no_subnet_available",
                    "no subnet or IP is available for the load balancer in "
                    "network %d" % nid)
            lb["private_net"].append({"network": nid, "ip": ip})
        pend_s = []
        for i, sb in enumerate(services):
            svc = self._service(sb, "services[%d]" % i)
            self._add_service_check(lb, svc, pend_s)
            pend_s.append(svc)
        lb["services"] = pend_s
        pend_t = []
        for i, tb in enumerate(targets):
            pend_t.append(self._target(lb, tb, pend_t, "targets[%d]" % i))
        lb["targets"] = pend_t
        self.lbs[lid] = lb
        if seed:
            return self.render_lb(lid), None
        aid = self._new_action("create_load_balancer",
                               [("load_balancer", lid)],
                               lock=("load_balancer", lid))
        return self.render_lb(lid), aid

    def update_lb(self, lid, body):
        with self.lock:
            lb = self._lb(lid)
            self._check_unlocked(lid)
            name = _field(body, "name", str)
            labels = _field(body, "labels", dict)
            if name is not None:
                self._check_name(name, lid)
            if labels is not None:
                self._check_labels(labels)
            if name is not None:
                lb["name"] = name
            if labels is not None:
                lb["labels"] = dict(labels)
            return self.render_lb(lid)

    def delete_lb(self, lid):
        with self.lock:
            lb = self._lb(lid)
            if lb["protection_delete"]:
                raise ApiError(423, "protected",
                               "load balancer %d is delete protected" % lid)
            self._check_unlocked(lid)
            del self.lbs[lid]

    def set_target_health(self, lid, listen_port, status, server=None,
                          ip=None):
        """Health a target reports for a service (default: default_health)."""
        with self.lock:
            key = ("server", server) if server is not None else ("ip", ip)
            self.lbs[lid]["health"][(key, listen_port)] = status

    def lb_action(self, lid, cmd, body):
        with self.lock:
            lb = self._lb(lid)
            handler = getattr(self, "_lba_" + cmd, None)
            if handler is None:
                raise not_found("action", cmd)
            self._check_unlocked(lid)
            apply, on_end, extra = handler(lb, body)
            res = [("load_balancer", lid)] + list(extra)
            return self.render_action(self._new_action(
                cmd, res, apply, ("load_balancer", lid), on_end))

    def _lba_add_target(self, lb, body):
        t = self._target(lb, body, [])

        def apply():
            lb["targets"].append(t)
        extra = [("server", t["server"])] if t["type"] == "server" else []
        return apply, None, extra

    def _lba_remove_target(self, lb, body):
        t = self._target(lb, body, [], removing=True)
        found = [x for x in lb["targets"] if _same_target(x, t)]
        if not found:
            raise invalid("type", "target is not defined")

        def apply():
            for x in found:
                if x in lb["targets"]:
                    lb["targets"].remove(x)
        extra = [("server", t["server"])] if t["type"] == "server" else []
        return apply, None, extra

    def _lba_add_service(self, lb, body):
        svc = self._service(body, "service")
        self._add_service_check(lb, svc, [])

        def apply():
            lb["services"].append(svc)
        return apply, None, []

    def _find_service(self, lb, body):
        port = _field(body, "listen_port", int, required=True, lo=1,
                      hi=65535)
        for s in lb["services"]:
            if s["listen_port"] == port:
                return s
        raise invalid("listen_port", "service with listen_port %d not found"
                      % port)

    def _lba_update_service(self, lb, body):
        old = self._find_service(lb, body)
        new = self._service(body, "service", existing=old)
        used = _ports([x for x in lb["services"] if x is not old]) & \
            _ports([new])
        if used:
            raise unprocessable("source_port_already_used",
                                "source port %d is already used" % min(used))

        def apply():
            if old in lb["services"]:
                lb["services"][lb["services"].index(old)] = new
        return apply, None, []

    def _lba_delete_service(self, lb, body):
        old = self._find_service(lb, body)

        def apply():
            if old in lb["services"]:
                lb["services"].remove(old)
        return apply, None, []

    def _lba_attach_to_network(self, lb, body):
        nid = _field(body, "network", int, required=True)
        ip_s = _field(body, "ip", str)
        ip_range = _field(body, "ip_range", str)
        net = self._network(nid)
        if lb["private_net"]:
            raise unprocessable("load_balancer_already_attached",
                                "load balancer is already attached to a "
                                "network")
        zone = self.locations[lb["location"]]["network_zone"]
        if ip_s is not None:
            ip = str(_ip(ip_s, "ip"))
            ok = any(sn["type"] == "cloud" and sn["network_zone"] == zone and
                     ipaddress.ip_address(ip) in ipaddress.IPv4Network(
                         sn["ip_range"]) and
                     ipaddress.ip_address(ip) > ipaddress.IPv4Network(
                         sn["ip_range"]).network_address + 1
                     for sn in net["subnets"])
            if not ok or ip in self._used_private(nid):
                raise unprocessable("ip_not_available",
                                    "IP %s is not available" % ip)
        else:
            ip = self._alloc_private(net, zone, ip_range=ip_range)
            if ip is None:
                raise unprocessable("no_subnet_available",
                                    "no subnet or IP is available for the "
                                    "load balancer in network %d" % nid)
        self._reserved.add(ip)

        def apply():
            lb["private_net"].append({"network": nid, "ip": ip})

        def on_end():
            self._reserved.discard(ip)
        return apply, on_end, [("network", nid)]

    def _lba_detach_from_network(self, lb, body):
        nid = _field(body, "network", int, required=True)
        self._network(nid)
        if not any(p["network"] == nid for p in lb["private_net"]):
            raise unprocessable("load_balancer_not_attached_to_network",
                                "load balancer is not attached to network %d"
                                % nid)

        def apply():
            lb["private_net"] = [p for p in lb["private_net"]
                                 if p["network"] != nid]
        return apply, None, [("network", nid)]

    def _lba_change_algorithm(self, lb, body):
        t = _field(body, "type", str, required=True,
                   choices=("round_robin", "least_connections"))

        def apply():
            lb["algorithm"] = t
        return apply, None, []

    def _lba_change_type(self, lb, body):
        new = self._lb_type(_field(body, "load_balancer_type", object,
                                   required=True))
        if len(lb["targets"]) > new["max_targets"] or \
                len(lb["services"]) > new["max_services"]:
            raise unprocessable("invalid_load_balancer_type",
                                "load balancer type %s does not fit the load "
                                "balancer" % new["name"])

        def apply():
            lb["type"] = new["name"]
        return apply, None, []

    def _lba_enable_public_interface(self, lb, body):
        def apply():
            lb["public_enabled"] = True
        return apply, None, []

    def _lba_disable_public_interface(self, lb, body):
        if any(not t["use_private_ip"] for t in lb["targets"]):
            raise unprocessable("targets_without_use_private_ip",
                                "the load balancer has targets that use the "
                                "public IP")

        def apply():
            lb["public_enabled"] = False
        return apply, None, []

    def _lba_change_dns_ptr(self, lb, body):
        ip = str(_ip(_field(body, "ip", str, required=True), "ip"))
        if "dns_ptr" not in body:
            raise invalid("dns_ptr", "is required")
        ptr = _field(body, "dns_ptr", str, nullable=True)
        if ip not in (lb["ipv4"], str(ipaddress.ip_address(lb["ipv6"]))):
            raise invalid("ip", "is not an address of the load balancer")

        def apply():
            if ip == lb["ipv4"]:
                lb["ipv4_ptr"] = ptr if ptr is not None else _ptr4(ip)
            else:
                lb["ipv6_ptr"] = ptr if ptr is not None else \
                    "static.%s.clients.your-server.de" % lb["id"]
        return apply, None, []

    def _lba_change_protection(self, lb, body):
        d = _field(body, "delete", bool)

        def apply():
            if d is not None:
                lb["protection_delete"] = d
        return apply, None, []

    # -- other read-only resources -----------------------------------------

    def set_lb_type(self, name, **fields):
        """Change a load balancer type (e.g. max_targets=2 for a quick limit
        test) or add one: id, description, max_connections, max_services,
        max_targets, max_assigned_certificates, deprecated."""
        with self.lock:
            t = self.lb_types.get(name)
            if t is None:
                t = {"id": max(x["id"] for x in self.lb_types.values()) + 1,
                     "name": name, "description": name.upper(),
                     "max_connections": 10000, "max_services": 5,
                     "max_targets": 25, "max_assigned_certificates": 10,
                     "deprecated": None, "prices": []}
                self.lb_types[name] = t
            for k, v in fields.items():
                if k not in t or k == "name":
                    raise ValueError("cannot set %r" % k)
                t[k] = v
            return copy.deepcopy(t)

    def list_locations(self, name=None):
        return [dict(loc) for loc in sorted(self.locations.values(),
                                            key=lambda x: x["id"])
                if name is None or loc["name"] == name]

    def list_server_types(self, name=None):
        return [copy.deepcopy(t) for t in sorted(self.server_types.values(),
                                                 key=lambda x: x["id"])
                if name is None or t["name"] == name]

    def list_lb_types(self, name=None):
        return [copy.deepcopy(t) for t in sorted(self.lb_types.values(),
                                                 key=lambda x: x["id"])
                if name is None or t["name"] == name]


_KEEP = object()


def _ports(services):
    """Source ports the services take: their listen ports, and 80 for an
    https service that redirects HTTP (its redirect listens there)."""
    out = set()
    for svc in services:
        out.add(svc["listen_port"])
        if svc["protocol"] == "https" and (svc.get("http") or {}).get(
                "redirect_http"):
            out.add(80)
    return out


def _same_target(a, b):
    if a["type"] != b["type"]:
        return False
    if a["type"] == "server":
        return a["server"] == b["server"]
    if a["type"] == "ip":
        return a["ip"] == b["ip"]
    return a["selector"] == b["selector"]


def _ptr4(ip):
    return "static.%s.clients.your-server.de" % ".".join(
        reversed(ip.split(".")))


def _image(name, arch):
    if name is None:
        return None
    return {"id": 114690387 if arch == "x86" else 114690389,
            "type": "system", "status": "available", "name": name,
            "description": name.replace("-", " ").title(),
            "image_size": None, "disk_size": 5,
            "created": "2023-06-13T06:00:02+00:00", "created_from": None,
            "bound_to": None, "os_flavor": name.split("-")[0],
            "os_version": name.split("-")[-1], "rapid_deploy": True,
            "protection": {"delete": False}, "deprecated": None,
            "deleted": None, "labels": {}, "architecture": arch}
