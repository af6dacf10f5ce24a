"""Includes point down (docs/internals.md, "Include layering"): every file
under src/ and providers/ includes only files of its own layer or of a layer
below it, the layers being, from the bottom:

  1. the building blocks (src/base/), then the HTTP/TLS layer (src/http/),
     then the configuration files (src/config/kubeconfig, cloudconfig);
  2. the API machinery (src/kube/) and the metadata services (src/metadata/);
  3. the provider interface, src/cloud.h: it includes only base/err.h,
     base/stop.h and system headers (src/cloud.c may use the layers below);
  4. the providers (providers/): each includes its own files, src/cloud.h and
     the layers below, never another provider's (providers/table/ alone
     names them all, for the table src/cloud.h declares);
  5. the controllers (src/controllers/), the serving endpoint (src/serve/)
     and doctor's analysis (src/doctor/);
  6. the command line and the daemon: src/config/flags, options and
     featuregate, src/cmd/, src/daemon, src/main.c.

And nothing under src/ includes a file under providers/: the daemon finds
the providers through the table. A header reached only through another
header is checked where it is included, so chains point down too."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# the Makefile's -I directories, after the including file's own directory
INCLUDE_DIRS = ("src", os.path.join("build", "gen"), os.path.join("tests", "unit"))
CLOUD_H_MAY_INCLUDE = ("src/base/err.h", "src/base/stop.h")

# (prefix, layer, name): the first prefix a path starts with gives its layer
LAYERS = (
    ("src/base/", 1.0, "the building blocks"),
    ("src/http/", 1.1, "the HTTP/TLS layer"),
    ("src/config/kubeconfig.", 1.2, "the configuration files"),
    ("src/config/cloudconfig.", 1.2, "the configuration files"),
    ("src/kube/", 2, "the API machinery"),
    ("src/metadata/", 2, "the metadata services"),
    ("src/cloud.", 3, "the provider interface"),
    ("providers/", 4, "the providers"),
    ("src/controllers/", 5, "the controllers"),
    ("src/serve/", 5, "the serving endpoint"),
    ("src/doctor/", 5, "doctor's analysis"),
    ("src/config/", 6, "the command line"),
    ("src/cmd/", 6, "the command line"),
    ("src/daemon.", 6, "the daemon"),
    ("src/main.c", 6, "the daemon"),
)


def rel(path, root):
    return os.path.relpath(path, root).replace(os.sep, "/")


def includes(path, root):
    """[(written, resolved, system)] of the #include lines of path: written
    as in the file; resolved relative to root (None when it is no file of the
    tree, e.g. a system or library header); system for <...>."""
    with open(path, errors="replace") as f:
        text = f.read()
    out = []
    for m in INCLUDE.finditer(text):
        system, name = m.group(1) == "<", m.group(2)
        resolved = None
        dirs = () if system else (os.path.dirname(path),)
        dirs += tuple(os.path.join(root, d) for d in INCLUDE_DIRS)
        for d in dirs:
            p = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(p):
                resolved = rel(p, root)
                break
        out.append((name, resolved, system))
    return out


def layer(path):
    """(layer, name) of a path of the tree, or None (not under a layer)."""
    for prefix, n, name in LAYERS:
        if path.startswith(prefix):
            return n, name
    return None


def provider_of(path):
    """The provider directory a path under providers/ belongs to."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "providers" else None


def file_violations(path, root):
    """What the includes of one file (a path relative to root) break."""
    bad = []
    here = layer(path)
    for written, resolved, system in includes(os.path.join(root, path), root):
        if path == "src/cloud.h":
            if not system and resolved not in CLOUD_H_MAY_INCLUDE:
                bad.append('src/cloud.h: includes "%s": only base/err.h, base/stop.h and '
                           "system headers" % written)
            continue
        if system or resolved is None:
            if not system and "providers/" in written and path.startswith("src/"):
                bad.append('%s: includes the provider file "%s"' % (path, written))
            continue
        if path.startswith("src/") and resolved.startswith("providers/"):
            bad.append('%s: includes the provider file "%s"' % (path, written))
            continue
        mine, theirs = provider_of(path), provider_of(resolved)
        if mine and theirs and mine != theirs and mine != "table":
            bad.append('%s: includes another provider\'s file "%s"' % (path, written))
            continue
        there = layer(resolved)
        if here and there and there[0] > here[0]:
            bad.append('%s (%s): includes upward "%s" (%s)' % (path, here[1], written,
                                                                there[1]))
    return bad


def layering_violations(root):
    """Every violation of the rules in root's tree, one line each."""
    bad = []
    for top in ("src", "providers"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    bad += file_violations(rel(os.path.join(dirpath, f), root), root)
    return sorted(set(bad))


def test_includes_point_down():
    bad = layering_violations(ROOT)
    assert not bad, "includes pointing up:\n  " + "\n  ".join(bad)


def test_every_source_file_has_a_layer():
    """A new folder under src/ must be given its place in the layers."""
    loose = []
    for top in ("src", "providers"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                p = rel(os.path.join(dirpath, f), ROOT)
                if f.endswith((".c", ".h")) and layer(p) is None:
                    loose.append(p)
    assert not loose, loose


def test_the_check_finds_what_it_forbids(tmp_path):
    """The check itself, on a tree made to break every rule once (and to
    keep to them elsewhere): otherwise a passing check could mean a check
    that finds nothing."""
    files = {
        "src/base/err.h": "#include <stdint.h>\n",
        "src/base/stop.h": "#include <pthread.h>\n",
        "src/base/log.h": '#include "base/err.h"\n',
        "src/base/up.c": '#include "http/http.h"\n',            # 1.0 -> 1.1
        "src/http/http.h": '#include "base/log.h"\n',
        "src/config/kubeconfig.h": '#include "http/http.h"\n',
        "src/config/flags.h": "",
        "src/config/options.h": '#include "config/flags.h"\n',
        "src/cloud.h": '#include <stdio.h>\n#include "base/err.h"\n#include "base/stop.h"\n'
                       '#include "base/log.h"\n',             # not on cloud.h's list
        "src/cloud.c": '#include "cloud.h"\n#include "kube/fine.h"\n',
        "src/kube/direct.h": '#include "config/flags.h"\n',   # 2 -> 6
        "src/kube/fine.h": '#include "config/kubeconfig.h"\n#include "kube/direct2.h"\n',
        "src/kube/direct2.h": "#include <string.h>\n",
        "src/kube/cloudy.c": '#include "cloud.h"\n',           # 2 -> 3
        "src/metadata/prov.h": '#include "../providers/table/table.h"\n',
        "src/daemon.c": '#include "config/flags.h"\n#include "../providers/x/x.h"\n',
        "src/controllers/ok.c": '#include "cloud.h"\n#include "kube/fine.h"\n',
        "src/controllers/opts.c": '#include "config/options.h"\n',  # 5 -> 6
        "src/cmd/doctor.c": '#include "config/flags.h"\n#include "controllers/ok.h"\n',
        "src/controllers/ok.h": "",
        "providers/table/table.c": '#include "cloud.h"\n#include "../x/x.h"\n'
                                   '#include "../y/y.h"\n',
        "providers/x/x.h": '#include "cloud.h"\n#include "metadata/prov.h"\n',
        "providers/y/y.h": '#include "cloud.h"\n#include "../x/x.h"\n',  # provider -> provider
        "providers/y/ctl.c": '#include "controllers/ok.h"\n',             # 4 -> 5
    }
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    assert layering_violations(str(tmp_path)) == sorted([
        'providers/y/ctl.c (the providers): includes upward "controllers/ok.h" '
        "(the controllers)",
        'providers/y/y.h: includes another provider\'s file "../x/x.h"',
        'src/base/up.c (the building blocks): includes upward "http/http.h" '
        "(the HTTP/TLS layer)",
        'src/cloud.h: includes "base/log.h": only base/err.h, base/stop.h and system headers',
        'src/controllers/opts.c (the controllers): includes upward "config/options.h" '
        "(the command line)",
        'src/daemon.c: includes the provider file "../providers/x/x.h"',
        'src/kube/cloudy.c (the API machinery): includes upward "cloud.h" '
        "(the provider interface)",
        'src/kube/direct.h (the API machinery): includes upward "config/flags.h" '
        "(the command line)",
        'src/metadata/prov.h: includes the provider file "../providers/table/table.h"',
    ])
