"""Includes point down (docs/internals.md): the API machinery (src/kube/),
the metadata layer (src/metadata/) and the provider interface (src/cloud.h)
never see the command line (flags.h, options.h) or a provider, directly or
through another header; src/cloud.h itself includes only err.h, stop.h and
system headers; and nothing under src/ includes a provider (providers/ sits
above src/: a provider includes src/cloud.h, the daemon finds it through the
provider table in providers/)."""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# the Makefile's -I directories, after the including file's own directory
INCLUDE_DIRS = ("src", os.path.join("build", "gen"), os.path.join("tests", "unit"))
COMMAND_LINE = ("src/config/flags.h", "src/config/options.h")
CLOUD_H_MAY_INCLUDE = ("src/base/err.h", "src/base/stop.h")


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


def is_provider(written, resolved):
    return "providers/" in written or (resolved or "").startswith("providers/")


def is_command_line(written, resolved):
    return resolved in COMMAND_LINE or os.path.basename(written) in ("flags.h", "options.h")


def upward_includes(header, root):
    """Every chain of includes by which header reaches flags.h, options.h or
    a provider's file, as "a.h -> b.h -> flags.h" strings."""
    bad = []
    seen = set()
    stack = [(os.path.join(root, header), [header])]
    while stack:
        path, chain = stack.pop()
        for written, resolved, _ in includes(path, root):
            if is_command_line(written, resolved) or is_provider(written, resolved):
                bad.append(" -> ".join(chain + [resolved or written]))
            elif resolved and resolved.endswith(".h") and resolved not in seen:
                seen.add(resolved)
                stack.append((os.path.join(root, resolved), chain + [resolved]))
    return sorted(bad)


def lower_headers(root):
    hs = glob.glob(os.path.join(root, "src", "kube", "*.h"))
    hs += glob.glob(os.path.join(root, "src", "metadata", "*.h"))
    hs.append(os.path.join(root, "src", "cloud.h"))
    return sorted(rel(h, root) for h in hs if os.path.isfile(h))


def layering_violations(root):
    """Every violation of the three rules in root's tree, one line each."""
    bad = []
    for h in lower_headers(root):
        bad += ["%s: includes upward: %s" % (h, c) for c in upward_includes(h, root)]
    cloud_h = os.path.join(root, "src", "cloud.h")
    if os.path.isfile(cloud_h):
        for written, resolved, system in includes(cloud_h, root):
            if not system and resolved not in CLOUD_H_MAY_INCLUDE:
                bad.append('src/cloud.h: includes "%s": only err.h, stop.h and system '
                           "headers" % written)
    for dirpath, _, files in os.walk(os.path.join(root, "src")):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            for written, resolved, _ in includes(path, root):
                if is_provider(written, resolved):
                    bad.append('%s: includes the provider file "%s"' % (rel(path, root), written))
    return sorted(set(bad))


def test_includes_point_down():
    bad = layering_violations(ROOT)
    assert not bad, "includes pointing up:\n  " + "\n  ".join(bad)


def test_the_check_finds_what_it_forbids(tmp_path):
    """The check itself, on a tree made to break every rule once (and to
    keep to them elsewhere): otherwise a passing check could mean a check
    that finds nothing."""
    files = {
        "src/config/flags.h": "",
        "src/config/options.h": '#include "config/flags.h"\n',
        "src/base/err.h": "#include <stdint.h>\n",
        "src/base/stop.h": "#include <pthread.h>\n",
        "src/base/log.h": '#include "base/err.h"\n',
        "src/middle.h": '#include "config/options.h"\n',     # upward, two steps away
        "src/cloud.h": '#include <stdio.h>\n#include "base/err.h"\n#include "base/stop.h"\n'
                       '#include "base/log.h"\n',             # not on cloud.h's list
        "src/kube/direct.h": '#include "config/flags.h"\n',
        "src/kube/indirect.h": '#include "base/log.h"\n#include "middle.h"\n',
        "src/kube/fine.h": '#include "base/err.h"\n#include "kube/direct2.h"\n',
        "src/kube/direct2.h": "#include <string.h>\n",
        "src/metadata/prov.h": '#include "../providers/table/table.h"\n',
        "src/daemon.c": '#include "config/flags.h"\n#include "../providers/x/x.h"\n',
        "src/controllers/ok.c": '#include "config/options.h"\n',  # above the line: allowed
        "providers/table/table.h": '#include "cloud.h"\n',
        "providers/x/x.h": '#include "cloud.h"\n',
    }
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    assert layering_violations(str(tmp_path)) == sorted([
        'src/cloud.h: includes "base/log.h": only err.h, stop.h and system headers',
        "src/daemon.c: includes the provider file \"../providers/x/x.h\"",
        "src/kube/direct.h: includes upward: src/kube/direct.h -> src/config/flags.h",
        "src/kube/indirect.h: includes upward: src/kube/indirect.h -> src/middle.h"
        " -> src/config/options.h",
        "src/metadata/prov.h: includes the provider file \"../providers/table/table.h\"",
        "src/metadata/prov.h: includes upward: src/metadata/prov.h"
        " -> providers/table/table.h",
    ])
