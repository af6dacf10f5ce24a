#!/usr/bin/python3
"""Install a fake /sys/class/dmi/id tree (dmi/<cloud>/) with the real file
modes: serial numbers and the product UUID are root-only (0400), the rest
world-readable (0444), as the kernel makes them.

Python:  dmi.install("azure", "/tmp/x/id") -> "/tmp/x/id"
CLI:     dmi.py CLOUD DEST        (dmi.py --list to name the trees)
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DMI_DIR = os.path.join(HERE, "dmi")

ROOT_ONLY = ("product_uuid", "product_serial", "board_serial", "chassis_serial")


def clouds():
    """Names of the shipped trees."""
    return sorted(d for d in os.listdir(DMI_DIR) if os.path.isdir(os.path.join(DMI_DIR, d)))


def source(cloud):
    """Path of the shipped tree for cloud (read-only use)."""
    path = os.path.join(DMI_DIR, cloud)
    if not os.path.isdir(path):
        raise ValueError("no DMI tree %r (one of %s)" % (cloud, ", ".join(clouds())))
    return path


def install(cloud, dest, modes=True):
    """Copy dmi/<cloud>/ to dest (created; must not hold other files) and,
    with modes, apply the kernel's file modes.  Returns dest."""
    src = source(cloud)
    os.makedirs(dest, exist_ok=True)
    for name in sorted(os.listdir(src)):
        target = os.path.join(dest, name)
        shutil.copyfile(os.path.join(src, name), target)
        if modes:
            os.chmod(target, 0o400 if name in ROOT_ONLY else 0o444)
    return dest


def read(cloud):
    """{file: value without the trailing newline} of a shipped tree."""
    src = source(cloud)
    out = {}
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name), encoding="utf-8") as f:
            out[name] = f.read().rstrip("\n")
    return out


def main(argv):
    if argv[1:] == ["--list"]:
        print("\n".join(clouds()))
        return 0
    if len(argv) != 3:
        print("usage: dmi.py CLOUD DEST | dmi.py --list", file=sys.stderr)
        return 2
    print(install(argv[1], argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
