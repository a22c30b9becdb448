#!/usr/bin/python3
"""Where the time of a durable write goes, canopy beside slapd: ldclt add and modify at 16 threads,
with a syscall count (strace -c) and a CPU profile (perf record) of each server under that load.

Usage: bench/lib/write-profile.py [ENTRIES] [OUT_DIR]   (CANOPY_BIN required; LDIF from
`canopy bench gen` when it is there, else bench/gen-ldif.py; THREADS=16)
Writes OUT_DIR/{rates.txt,strace-*.txt,perf-*.txt}. Stops only the servers it started.
"""

import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ldclt  # noqa: E402
from servers import Canopy, Slapd, cpu_seconds, log  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def under_load(srv, argv, tool_argv, out_path, settle=3):
    """Runs ldclt against srv and, after `settle` seconds, tool_argv (which ends on its own)."""
    load = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(settle)
        with open(out_path, "w") as f:
            subprocess.run(tool_argv, stdout=f, stderr=subprocess.STDOUT)
    finally:
        load.wait()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="write-profile.")
    threads = int(os.environ.get("THREADS", "16"))
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="write-profile-work.")
    binary = os.environ["CANOPY_BIN"]
    ldif = os.path.join(work, "data.ldif")
    r = subprocess.run([binary, "bench", "gen", "--entries", str(n), "--passwords", "--out", ldif],
                       capture_output=True)
    if r.returncode != 0:
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen-ldif.py"), "-n", str(n),
                        "-o", ldif], check=True)
    pair = [Canopy(work, binary), Slapd(work)]
    rates = []
    try:
        for srv in pair:
            srv.load(ldif)
            srv.start()
        for srv in pair:
            for op in ("add", "modify"):
                prefix = "p%s" % op[0]
                # 1: plain rate (one 10 s sample); seeds the entries that modify then changes
                if op == "add":
                    argv = ldclt.add(srv.port, threads, 1, prefix)
                else:
                    argv = ldclt.modify(srv.port, threads, 1, "pa", 1000)
                c0 = cpu_seconds(srv.pid)
                rate, total, err = ldclt.run(argv, os.path.join(out, "ldclt.log"))
                cpu = cpu_seconds(srv.pid) - c0
                rates.append("%s %s: %.0f/s, %d ops, server CPU %.0f µs/op%s" % (
                    srv.name, op, rate, total, cpu * 1e6 / max(total, 1), " ERR" if err else ""))
                log(rates[-1])
                # 2: syscalls per op under the same load (strace slows the server: counts, not time)
                if op == "add":
                    argv = ldclt.add(srv.port, threads, 1, prefix + "s")
                under_load(srv, argv, ["timeout", "-s", "INT", "5", "strace", "-c", "-f", "-p",
                                       str(srv.pid)], os.path.join(out, "strace-%s-%s.txt" % (srv.name, op)))
                # 3: CPU profile
                if op == "add":
                    argv = ldclt.add(srv.port, threads, 1, prefix + "p")
                data = os.path.join(work, "perf-%s-%s.data" % (srv.name, op))
                under_load(srv, argv, ["perf", "record", "-q", "-g", "-o", data, "-p", str(srv.pid),
                                       "--", "sleep", "5"], os.devnull)
                with open(os.path.join(out, "perf-%s-%s.txt" % (srv.name, op)), "w") as f:
                    subprocess.run(["perf", "report", "-q", "-i", data, "--no-children", "-g", "none",
                                    "--sort", "dso,sym", "--stdio"], stdout=f, stderr=subprocess.DEVNULL)
    finally:
        for srv in pair:
            srv.stop()
    with open(os.path.join(out, "rates.txt"), "w") as f:
        f.write("\n".join(rates) + "\n")
    log("results in %s (work %s)" % (out, work))


if __name__ == "__main__":
    main()
