"""The build's output: one short line per step (`CC src/x.c`), the full
commands with V=1, nothing with make -s; every recipe line of the Makefile
goes through that switch."""

import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = "src/base/clock.c"   # small, and needs nothing but libc


def make(build, *args):
    """Run make in the tree with BUILD=build to compile SOURCE for the
    sanitizer build alone; returns its stdout lines. The environment of an
    outer make (make check V=1, make -s check) is left out."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "V")}
    obj = "%s/dev/%s.o" % (build, SOURCE[:-2])
    r = subprocess.run(["make", "BUILD=" + build] + list(args) + [obj], cwd=ROOT,
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.isfile(obj)
    return r.stdout.splitlines(), r.stderr


def test_make_prints_one_short_line_per_step(tmp_path):
    build = str(tmp_path / "build")
    lines, err = make(build)
    assert lines == ["  GEN       %s/gen/version.h" % build,
                     "  CC [dev]  %s" % SOURCE], lines
    assert err == ""
    # nothing to do the second time: no line at all
    assert make(build)[0] == []


def test_make_v1_prints_the_commands(tmp_path):
    build = str(tmp_path / "build")
    lines, _ = make(build, "V=1")
    cc = [l for l in lines if l.startswith("gcc ")]
    assert len(cc) == 1 and cc[0].endswith("-c %s -o %s/dev/%s.o" % (SOURCE, build, SOURCE[:-2])), lines
    assert "-fsanitize=address,undefined" in cc[0]
    assert not [l for l in lines if l.startswith("  CC")], lines


def test_make_s_prints_nothing(tmp_path):
    assert make(str(tmp_path / "build"), "-s")[0] == []


def test_every_recipe_line_is_quiet_unless_v1():
    """A recipe line runs under $(Q) or @, or is the step's short line
    $(call say,...): otherwise make would echo it in the quiet build."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        text = f.read()
    loud = []
    continued = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("\t") and not continued:
            body = line[1:]
            if not re.match(r"(\+?\$\(Q\)|\+?@|\$\(call say,)", body):
                loud.append("Makefile:%d: %s" % (n, body))
        continued = line.endswith("\\")
    assert not loud, "recipe lines make would echo:\n" + "\n".join(loud)
