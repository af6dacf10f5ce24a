#!/usr/bin/python3
"""Test PKI: a CA, server and client certificates made with the openssl CLI.

Files are PEM, written into one directory as NAME.crt / NAME.key.  Client
certificates carry the user in CN and the groups in O (one O per group) with
the clientAuth extended key usage, the way kube-apiserver reads them.

Module use:
    ca = pki.make_ca(d)                                    # -> pki.Pair
    srv = pki.make_server_cert(d, ca, "apiserver", ["DNS:kubernetes", "IP:10.96.0.1"])
    cli = pki.make_client_cert(d, ca, "admin", "kubernetes-admin", ["system:masters"])

CLI use:
    pki.py ca DIR [--cn NAME] [--key-type ec|rsa]
    pki.py server DIR NAME --san DNS:kubernetes --san IP:10.96.0.1 [--cn CN]
    pki.py client DIR NAME --user USER [--group G ...]
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile

Pair = collections.namedtuple("Pair", "cert key")

DEFAULT_DAYS = 3650


def _run(args):
    r = subprocess.run(["openssl"] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" %
                           (args[0], r.stderr.decode(errors="replace")))
    return r.stdout


def _genkey(path, key_type):
    if key_type == "rsa":
        _run(["genpkey", "-algorithm", "RSA", "-pkeyopt",
              "rsa_keygen_bits:2048", "-out", path])
    elif key_type == "ec":
        _run(["genpkey", "-algorithm", "EC", "-pkeyopt",
              "ec_paramgen_curve:P-256", "-out", path])
    else:
        raise ValueError("key_type must be 'ec' or 'rsa'")
    os.chmod(path, 0o600)


def _subj_escape(s):
    # openssl -subj uses '/' and '=' as separators, '\' escapes them
    return s.replace("\\", "\\\\").replace("/", "\\/").replace("=", "\\=") \
            .replace("+", "\\+")


def _subject(cn, orgs=()):
    parts = ["/O=" + _subj_escape(o) for o in orgs]
    parts.append("/CN=" + _subj_escape(cn))
    return "".join(parts)


def make_ca(directory, name="ca", cn="kubernetes", key_type="ec",
            days=DEFAULT_DAYS):
    """Create a self-signed CA as DIR/NAME.crt and DIR/NAME.key; return Pair."""
    os.makedirs(directory, exist_ok=True)
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    _genkey(key, key_type)
    with tempfile.NamedTemporaryFile("w", suffix=".cnf", delete=False) as f:
        f.write("[req]\ndistinguished_name=dn\n[dn]\n[v3_ca]\n"
                "basicConstraints=critical,CA:TRUE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign\n"
                "subjectKeyIdentifier=hash\n")
        cnf = f.name
    try:
        _run(["req", "-x509", "-new", "-key", key, "-out", cert,
              "-days", str(days), "-subj", _subject(cn), "-config", cnf,
              "-extensions", "v3_ca", "-sha256"])
    finally:
        os.unlink(cnf)
    return Pair(cert, key)


def _sign(directory, ca, name, subject, ext, key_type, days):
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    csr = os.path.join(directory, name + ".csr")
    _genkey(key, key_type)
    with tempfile.NamedTemporaryFile("w", suffix=".cnf", delete=False) as f:
        f.write("[req]\ndistinguished_name=dn\n[dn]\n[ext]\n" + ext)
        cnf = f.name
    try:
        _run(["req", "-new", "-key", key, "-out", csr, "-subj", subject,
              "-config", cnf])
        _run(["x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key,
              "-CAcreateserial", "-out", cert, "-days", str(days), "-sha256",
              "-extfile", cnf, "-extensions", "ext"])
    finally:
        os.unlink(cnf)
        if os.path.exists(csr):
            os.unlink(csr)
    return Pair(cert, key)


def make_server_cert(directory, ca, name, sans, cn="kube-apiserver",
                     key_type="ec", days=DEFAULT_DAYS):
    """Sign a serving certificate for SANs like ["DNS:kubernetes", "IP:10.96.0.1"].

    ca is a Pair from make_ca.  Writes DIR/NAME.crt and DIR/NAME.key; returns Pair.
    """
    for s in sans:
        if not (s.startswith("DNS:") or s.startswith("IP:")):
            raise ValueError("SAN must start with DNS: or IP: (%r)" % s)
    ext = ("basicConstraints=critical,CA:FALSE\n"
           "keyUsage=critical,digitalSignature,keyEncipherment\n"
           "extendedKeyUsage=serverAuth\n"
           "authorityKeyIdentifier=keyid\n")
    if sans:
        ext += "subjectAltName=" + ",".join(sans) + "\n"
    return _sign(directory, ca, name, _subject(cn), ext, key_type, days)


def make_client_cert(directory, ca, name, user, groups=(), key_type="ec",
                     days=DEFAULT_DAYS):
    """Sign a client certificate: CN=user, one O per group, clientAuth EKU.

    Writes DIR/NAME.crt and DIR/NAME.key; returns Pair.
    """
    ext = ("basicConstraints=critical,CA:FALSE\n"
           "keyUsage=critical,digitalSignature,keyEncipherment\n"
           "extendedKeyUsage=clientAuth\n"
           "authorityKeyIdentifier=keyid\n")
    return _sign(directory, ca, name, _subject(user, groups), ext, key_type,
                 days)


def load_ca(directory, name="ca"):
    """Return the Pair of an existing CA in DIR."""
    return Pair(os.path.join(directory, name + ".crt"),
                os.path.join(directory, name + ".key"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("ca", help="create DIR/ca.crt and DIR/ca.key")
    c.add_argument("dir")
    c.add_argument("--cn", default="kubernetes")
    c.add_argument("--name", default="ca")
    c.add_argument("--key-type", default="ec", choices=["ec", "rsa"])
    s = sub.add_parser("server", help="sign DIR/NAME.crt with DIR/ca")
    s.add_argument("dir")
    s.add_argument("name")
    s.add_argument("--san", action="append", default=[])
    s.add_argument("--cn", default="kube-apiserver")
    s.add_argument("--ca", default="ca", help="CA name in DIR (default ca)")
    s.add_argument("--key-type", default="ec", choices=["ec", "rsa"])
    k = sub.add_parser("client", help="sign DIR/NAME.crt with DIR/ca")
    k.add_argument("dir")
    k.add_argument("name")
    k.add_argument("--user", required=True)
    k.add_argument("--group", action="append", default=[])
    k.add_argument("--ca", default="ca", help="CA name in DIR (default ca)")
    k.add_argument("--key-type", default="ec", choices=["ec", "rsa"])
    a = p.parse_args(argv)
    if a.cmd == "ca":
        r = make_ca(a.dir, a.name, a.cn, a.key_type)
    elif a.cmd == "server":
        r = make_server_cert(a.dir, load_ca(a.dir, a.ca), a.name, a.san, a.cn,
                             a.key_type)
    else:
        r = make_client_cert(a.dir, load_ca(a.dir, a.ca), a.name, a.user,
                             a.group, a.key_type)
    print(r.cert)
    print(r.key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
