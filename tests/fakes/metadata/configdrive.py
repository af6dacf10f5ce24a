#!/usr/bin/python3
"""Write an OpenStack config drive tree (openstack/latest/meta_data.json,
network_data.json, vendor_data.json, vendor_data2.json[, user_data]) from an
identity, with the same documents the fake metadata service serves.

The shipped configdrive/ directory is `configdrive.py configdrive` run with
the default identity (identities/openstack.json).

CLI:  configdrive.py [--identity FILE.json] DEST
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--identity", help="JSON file merged over identities/openstack.json")
    ap.add_argument("dest")
    args = ap.parse_args(argv)
    server.write_configdrive(server.load_identity("openstack", args.identity), args.dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
