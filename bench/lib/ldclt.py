"""ldclt (389-ds-base), the load generator that is not ours: exact-uid searches and write rates.

ldclt reports one rate per 10 s sample; `-N samples` sets the run length. Its add/modify/delete modes
build the DN from the `-f` pattern and the base, so the write checks work on entries ldclt adds itself
(`cn=benchNNNNNNN,ou=Accounting,...`, objectClass person), never on the generated users, whose
organizational unit varies with the number.
"""

import re
import shutil
import subprocess

from servers import ROOT_DN, ROOT_PW, SUFFIX, BenchError

WRITE_BASE = "ou=Accounting," + SUFFIX
RATE_RE = re.compile(r"Global average rate:.*\(\s*([0-9.]+)/sec\),\s*total:\s*(\d+)")


def available():
    return shutil.which("ldclt") is not None


def command(port, threads, samples, mode, pattern, low, high, admin=False, base=SUFFIX):
    argv = ["ldclt", "-h", "127.0.0.1", "-p", str(port), "-N", str(samples), "-q", "-b", base]
    if admin:
        argv += ["-D", ROOT_DN, "-w", ROOT_PW]
    argv += ["-e", mode, "-f", pattern, "-r", str(low), "-R", str(high), "-n", str(threads)]
    return argv


def run(argv, log_path):
    """Runs ldclt; returns (rate per second, total operations, error text or None)."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    out = r.stdout + r.stderr
    with open(log_path, "a") as f:
        f.write("$ " + " ".join(argv) + "\n" + out + "\n")
    m = RATE_RE.search(out)
    if not m:
        raise BenchError("ldclt printed no rate (see %s)" % log_path)
    err = None if "Global no error occurs" in out else "ldclt reported errors (see %s)" % log_path
    return float(m.group(1)), int(m.group(2)), err


def search(port, threads, samples, entries):
    return command(port, threads, samples, "esearch,random", "uid=userXXXXXXX", 0, entries - 1)


def add(port, threads, samples, prefix):
    # incr + commoncounter + noloop: every thread takes the next free number, so no name is
    # added twice; the base holds no cn=bench* entries before the first add.
    return command(port, threads, samples, "add,person,incr,noloop,commoncounter",
                   "cn=%sXXXXXXX" % prefix, 0, 9999999, admin=True, base=WRITE_BASE)


def modify(port, threads, samples, prefix, count, attr="sn"):
    """Replaces `attr` of a random one of the first `count` added entries: `sn` is indexed (eq, sub) on
    both servers, `description` is not (it is what `canopy bench`'s modify workload replaces)."""
    return command(port, threads, samples, "attreplace=%s:modified XXXXXX,random" % attr,
                   "cn=%sXXXXXXX" % prefix, 0, count - 1, admin=True, base=WRITE_BASE)


def delete(port, threads, samples, prefix, count):
    return command(port, threads, samples, "delete,incr,noloop,commoncounter",
                   "cn=%sXXXXXXX" % prefix, 0, count - 1, admin=True, base=WRITE_BASE)
