#!/usr/bin/python3
"""local_race.py - how long does the node bootccm runs on stay tainted when
the cloud API misbehaves: start to the local Node initialized from the
metadata service, with the hcloud provider's API black-holed, dripping a
byte a second, hanging in the TLS handshake, its name not resolving (a
resolver that never answers, in a mount namespace: needs root), refused,
answering 401, or 429 with a Retry-After of an hour.

    bench/local_race.py                       every case, 10 runs each
    bench/local_race.py --runs 3 --case blackhole --case dns
    bench/local_race.py --bootccm build/dev/bootccm --json build/bench/local_race.jsonl

Each run starts everything afresh on loopback, as tests/e2e/test_local_race.py
does (its start_case builds each case): the fake API server with the
shipped RBAC and the Node registered (tainted), the fake Hetzner metadata
service, the cloud API in its state, then bootccm (--cloud-provider=hcloud,
the metadata service as its fallback). The time runs from just before
bootccm is started (the API server answers from the start) until a poll
(every 10 ms) sees the Node untainted with the metadata service's
providerID and addresses. Two CPU burners (`python3 -c 'while 1: pass'`)
run throughout, as in the test. bootccm is killed after each run (its stop
is not measured here).

One JSON line per run on stdout (and in --json OUT), then the median and
worst per case. Method and figures: bench/RESULTS.md."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


def say(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def one_run(case, m, apiserver, harness):
    """Seconds from start to the local node initialized, for one run (m: the
    test module, apiserver and harness: the fakes' and the tests' modules)."""
    tmp = tempfile.mkdtemp(prefix="local-race-")
    started, keep = [], []
    md = m.mdserver.FakeMetadata("hetzner").start()

    def start(args, prefix=()):
        started.append(harness.Daemon(args, prefix=prefix))
        return started[-1]

    try:
        with apiserver.FakeAPIServer() as api, m.fakehcloud.FakeHcloud() as hc:
            d, t0, keep = m.start_case(case, api, tmp, md, start, hc)
            return m.time_to_initialized(api, d, t0)
    finally:
        for d in started:
            d.proc.kill()
            d.proc.wait()
            d.log.close()
            os.unlink(d.log_path)
        for k in keep:
            k.close()
        md.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--case", action="append", help="one of the cases (default: all)")
    p.add_argument("--bootccm", default=os.path.join(ROOT, "build", "bootccm"))
    p.add_argument("--json", help="also append the JSON lines to this file")
    a = p.parse_args()
    os.environ["BOOTCCM"] = os.path.abspath(a.bootccm)

    import test_local_race as m   # noqa: E402  (puts tests/fakes, tests/common on the path)
    import apiserver              # noqa: E402
    import harness                # noqa: E402
    cases = a.case or m.CASES
    for c in cases:
        if c not in m.CASES:
            p.error("--case %s: not one of %s" % (c, ", ".join(m.CASES)))
    out = open(a.json, "a") if a.json else None
    burners = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    times = {c: [] for c in cases}
    try:
        for c in cases:
            for i in range(a.runs):
                took = one_run(c, m, apiserver, harness)
                times[c].append(took)
                line = json.dumps({"case": c, "run": i + 1, "seconds": round(took, 4)})
                print(line)
                sys.stdout.flush()
                if out:
                    out.write(line + "\n")
                    out.flush()
    finally:
        for b in burners:
            b.kill()
            b.wait()
        if out:
            out.close()
    say("%-10s %5s %8s %8s" % ("case", "runs", "median", "worst"))
    for c in cases:
        v = times[c]
        say("%-10s %5d %7.3fs %7.3fs" % (c, len(v), statistics.median(v), max(v)))


if __name__ == "__main__":
    main()
