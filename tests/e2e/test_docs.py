"""The man page documents exactly the flags the binary has."""

import os
import re

from conftest import ROOT, run


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
