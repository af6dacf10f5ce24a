"""The docs say what the binary and the source do: the man page's flags and
exit codes, the operator guide's input limits and controllers, README's
size figure."""

import os
import re

from conftest import ROOT, bootccm_path, run


def help_flags():
    out = run(["--help"]).stdout
    return set(re.findall(r"^\s+(--?[a-z][a-z0-9-]*)", out, re.M))


def man_flags():
    with open(os.path.join(ROOT, "docs", "bootccm.8")) as f:
        text = f.read()
    found = set()
    for m in re.finditer(r"^\.B[I]?\s+(\\-\\-|\\-)([a-z][a-z0-9\\-]*)", text, re.M):
        found.add(("--" if m.group(1) == "\\-\\-" else "-") + m.group(2).replace("\\-", "-"))
    return found


def test_man_page_documents_every_flag_and_no_other():
    assert help_flags() == man_flags()


def section(text, start, end):
    """The text between the first line starting with start and the next
    starting with end."""
    a = text.index("\n" + start) + 1
    b = text.index("\n" + end, a)
    return text[a:b]


def header_value(name):
    """The value of #define NAME in src/, evaluated: (1024 * 1024) and such."""
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            if not f.endswith(".h"):
                continue
            with open(os.path.join(d, f)) as fh:
                m = re.search(r"^#define %s\s+([^/\n]+)" % name, fh.read(), re.M)
            if m:
                expr = m.group(1).strip()
                assert re.fullmatch(r"[0-9 ()*+]+", expr), (name, expr)
                return eval(expr)
    raise AssertionError("no #define %s under src/" % name)


def as_text(v, unit):
    if unit in ("levels", ""):
        return "{:,}".format(v) + (" levels" if unit else "")
    for size, suffix in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if v % size == 0:
            return "%d %s" % (v // size, suffix)
    return "%d bytes" % v


def test_the_input_limits_are_the_sources():
    with open(os.path.join(ROOT, "docs", "operator-guide.md")) as f:
        table = section(f.read(), "## Input limits", "## ")
    rows = re.findall(r"^\| [^|]+ \| ([^|]+) \| `([A-Z0-9_]+)` \|$", table, re.M)
    assert len(rows) >= 10, table
    for shown, name in rows:
        seconds = re.fullmatch(r"([0-9,]+) s \(([0-9]+)h\)", shown)
        if seconds:
            v = header_value(name)
            assert int(seconds.group(1).replace(",", "")) == v, (name, shown)
            assert int(seconds.group(2)) * 3600 == v, (name, shown)
            continue
        unit = "levels" if shown.endswith("levels") else ("" if shown[-1].isdigit() else "b")
        assert shown == as_text(header_value(name), unit), (name, shown)


def test_the_guide_names_the_controllers_this_version_has():
    """The migration section's list is the --controllers list --help gives."""
    r = run(["--help"])
    m = re.search(r"All: ([a-z, -]+)\.", r.stdout + r.stderr)
    assert m, "--help lists the controllers"
    known = set(m.group(1).split(", "))
    with open(os.path.join(ROOT, "docs", "operator-guide.md")) as f:
        m = re.search(r"^Controllers in this version: (.*)\.$", f.read(), re.M)
    assert m, "the migration section names the controllers"
    assert set(re.findall(r"\*\*([a-z-]+)\*\*", m.group(1))) == known


def test_exit_status_lists_every_exit_code():
    with open(os.path.join(ROOT, "docs", "bootccm.8")) as f:
        text = section(f.read(), ".SH EXIT STATUS", ".SH ")
    codes = set()
    for name in ("main.c", "daemon.c", "base/log.c"):
        with open(os.path.join(ROOT, "src", name)) as f:
            src = f.read()
        codes |= set(re.findall(r"\breturn ([0-9]+);", re.sub(
            r"static [a-z ]+\*?\n[a-z_]+\([^)]*\)\n\{.*?\n\}\n", "", src, flags=re.S)))
        codes |= set(re.findall(r"\brc = ([0-9]+);", src))
        codes |= set(re.findall(r"\bexit\(([0-9]+)\)", src))
    with open(os.path.join(ROOT, "src", "cmd", "metadata.h")) as f:
        codes |= set(re.findall(r"#define MD_CMD_EXIT_[A-Z_]+ ([0-9]+)", f.read()))
    assert {"0", "1", "2", "3", "4", "255"} <= codes, codes
    for c in codes:
        assert re.search(r"(^\.B %s$|\b%s [a-z])" % (c, c), text, re.M), (c, text)


def _is_static(path):
    """True when the ELF file has no program interpreter (PT_INTERP)."""
    import struct
    with open(path, "rb") as f:
        h = f.read(64)
        if h[:4] != b"\x7fELF" or h[4] != 2:
            return False
        phoff, = struct.unpack_from("<Q", h, 32)
        phentsize, phnum = struct.unpack_from("<HH", h, 54)
        f.seek(phoff)
        for _ in range(phnum):
            if struct.unpack_from("<I", f.read(phentsize))[0] == 3:
                return False
    return True


def test_readme_size_figure_is_the_static_binary():
    path = bootccm_path()
    if not _is_static(path):
        path = os.path.join(ROOT, "build", "bootccm")
    assert os.path.exists(path) and _is_static(path), "build the static binary: make"
    with open(os.path.join(ROOT, "README.md")) as f:
        m = re.search(r"`build/bootccm` is about \*\*([0-9.]+) MiB\*\* stripped", f.read())
    assert m, "README states the static binary's size"
    size = os.path.getsize(path) / (1 << 20)
    assert m.group(1) == "%.1f" % size, (m.group(1), size)


def duration_flags():
    out = run(["--help"]).stdout
    head = out.split("\nUpstream cloud-controller-manager flags")[0]
    return re.findall(r"^\s+--([a-z][a-z0-9-]*) duration", head, re.M)


def test_the_man_page_states_each_duration_flags_bounds():
    """Each duration flag's paragraph says "at most X", and X is the bound the
    binary enforces: X passes, one nanosecond more exits 2 naming the flag
    and X."""
    with open(os.path.join(ROOT, "docs", "bootccm.8")) as f:
        man = f.read()
    flags = duration_flags()
    assert len(flags) >= 13, flags
    for flag in flags:
        esc = flag.replace("-", "\\-")
        m = re.search(r"^\.BI \\-\\-%s \" duration\"\n((?:[^.].*\n)+)" % re.escape(esc), man,
                      re.M)
        assert m, flag
        bound = re.search(r"at\s+most\s+([0-9]+)h\)", m.group(1))
        assert bound, (flag, m.group(1))
        hours = int(bound.group(1))
        ok = ["--%s=%dh" % (flag, hours)]
        bad = ["--%s=%dns" % (flag, hours * 3600 * 10**9 + 1)]
        # the leader-election flags' relations (lease > renew > 1.2 x retry)
        # are not the bounds: checked without leader election
        args = ["--validate", "--kubeconfig=/nonexistent", "--leader-elect=false"]
        missing = 2
        if flag == "timeout":
            args, missing = ["check-kubeconfig", "--kubeconfig=/nonexistent"], 1
        r = run(args + ok + bad)
        assert r.returncode == 2 and "--%s " % flag in r.stderr, (flag, r.stderr)
        assert "at most %dh0m0s" % hours in r.stderr, (flag, r.stderr)
        r = run(args + ok)
        # past the flags: the missing kubeconfig is what fails
        assert r.returncode == missing and "/nonexistent" in r.stderr, (flag, r.stderr)
