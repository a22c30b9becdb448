"""Start, load, watch and stop Debian's slapd (back-mdb) and canopy side by side.

Both servers get the same suffix, schema, indexes and limits so that they do the same work:
the index list INDEXES (canopy's defaults, docs/configuration.md) written into both configurations
(canopy's `indexes`, slapd's `index` lines), no size limit on either (the scan workload reads the whole
directory), root DN cn=admin,dc=example,dc=com with password "secret", one durable commit per write on
both (canopy's `durable = true`, slapd's back-mdb without `dbnosync`), and no per-operation logging on
either (slapd `loglevel 0`, canopy logs none). slapd's settings and why each was chosen are in
docs/PERFORMANCE.md ("How slapd runs in the comparison").
"""

import os
import sys
import shutil
import signal
import socket
import subprocess
import time

SUFFIX = "dc=example,dc=com"
ROOT_DN = "cn=admin," + SUFFIX
ROOT_PW = "secret"

# (attribute, kinds) as canopy's defaults.
INDEXES = [
    ("objectClass", "eq"),
    ("uid", "eq,sub"),
    ("cn", "eq,sub"),
    ("sn", "eq,sub"),
    ("mail", "eq,sub"),
    ("member", "eq"),
    ("memberUid", "eq"),
    ("uidNumber", "eq"),
    ("gidNumber", "eq"),
    ("entryUUID", "eq"),
    ("entryCSN", "eq"),
]

CLK_TCK = os.sysconf("SC_CLK_TCK")

# slapd's worker threads (`threads`). Its default is 16; on this 2-core machine 16 measured best or
# within noise of the best for both searches and durable writes (docs/PERFORMANCE.md), so it stays,
# written out so that the setting is visible. SLAPD_THREADS overrides it.
SLAPD_THREADS = int(os.environ.get("SLAPD_THREADS", "16"))
# slapadd's indexing threads (`tool-threads`, default 1): the core count, as for an expert's bulk load.
TOOL_THREADS = int(os.environ.get("SLAPD_TOOL_THREADS", str(os.cpu_count() or 1)))


class BenchError(Exception):
    """A failure that must stop the comparison with a non-zero exit."""


def log(msg):
    print("compare: " + msg, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slapd_conf(work, data, loglevel="0", threads=None):
    """slapd.conf for a server whose files live in `work` and database in `data`."""
    modules = "".join(
        "moduleload %s\n" % m
        for m in ("pw-sha2", "argon2", "pw-pbkdf2")
        if os.path.exists("/usr/lib/ldap/%s.so" % m)
    )
    schema = "".join(
        "include /etc/ldap/schema/%s.schema\n" % s
        for s in ("core", "cosine", "inetorgperson", "nis")
    )
    indexes = "".join("index %s %s\n" % (a, k) for a, k in INDEXES)
    return (
        schema
        + "modulepath /usr/lib/ldap\nmoduleload back_mdb\n"
        + modules
        + "pidfile %s/slapd.pid\nargsfile %s/slapd.args\n" % (work, work)
        # loglevel 0: slapd's default "stats" writes a syslog line per operation, canopy logs none.
        + "loglevel %s\n" % loglevel
        + "threads %d\ntool-threads %d\n" % (threads or SLAPD_THREADS, TOOL_THREADS)
        + "sizelimit unlimited\n"
        + 'access to dn.exact="" by * read\n'
        + 'access to dn.exact="cn=Subschema" by * read\n'
        + "database mdb\n"
        + 'suffix "%s"\nrootdn "%s"\nrootpw %s\n' % (SUFFIX, ROOT_DN, ROOT_PW)
        + "directory %s\n" % data
        # back-mdb's default map is 10 MiB; canopy grows its map by itself.
        + "maxsize 68719476736\n"
        + indexes
        + "access to attrs=userPassword by self write by anonymous auth by * none\n"
        + "access to * by * read\n"
    )


def canopy_conf(data, port):
    return (
        'listen = ["ldap://127.0.0.1:%d"]\n' % port
        + 'data_dir = "%s"\n' % data
        + 'suffix = "%s"\nroot_dn = "%s"\nroot_password = "%s"\n' % (SUFFIX, ROOT_DN, ROOT_PW)
        + "durable = true\n"
        + "indexes = [\n"
        + "".join(
            '  { attr = "%s", kinds = [%s] },\n'
            % (a, ", ".join('"%s"' % k for k in kinds.split(",")))
            for a, kinds in INDEXES
        )
        + "]\n"
        + "[limits]\nsize_limit = 0\n"
    )


def proc_status(pid):
    """VmRSS, VmHWM and the anonymous and file-backed parts of VmRSS of a process in KiB (0 when gone)."""
    out = {"VmRSS": 0, "VmHWM": 0, "RssAnon": 0, "RssFile": 0}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in out:
                    out[key] = int(rest.split()[0])
    except OSError:
        pass
    return out


def cpu_seconds(pid):
    """User + system CPU seconds a process has used so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def du_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def mdb_pages(path):
    """Pages in use of the LMDB environment at `path` (mdb_stat -e), or None."""
    if not shutil.which("mdb_stat"):
        return None
    try:
        out = subprocess.run(
            ["mdb_stat", "-e", path], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if "Number of pages used" in line:
            return int(line.split(":")[1])
    return None


def mdb_entries(path, table):
    """Records in one named table of the LMDB environment at `path` (mdb_stat -s), or None."""
    if not shutil.which("mdb_stat"):
        return None
    try:
        out = subprocess.run(
            ["mdb_stat", "-s", table, path], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.strip().startswith("Entries:"):
            return int(line.split(":")[1])
    return None


class Server:
    """One server of the comparison: its work dir, data dir, port and process."""

    def __init__(self, name, work):
        self.name = name
        self.work = os.path.join(work, name)
        self.data = os.path.join(self.work, "data")
        self.port = None
        self.proc = None
        self.load_seconds = None
        os.makedirs(self.data, exist_ok=True)

    @property
    def url(self):
        return "ldap://127.0.0.1:%d" % self.port

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.alive():
                raise BenchError("%s exited early; see %s" % (self.name, self.log_path))
            r = subprocess.run(
                ["ldapsearch", "-x", "-H", self.url, "-b", "", "-s", "base", "-LLL", "dn"],
                capture_output=True,
            )
            if r.returncode == 0:
                return
            time.sleep(0.1)
        raise BenchError("%s did not answer on port %d" % (self.name, self.port))

    @property
    def log_path(self):
        return os.path.join(self.work, "server.log")

    def _spawn(self, argv, env=None):
        self.port = self.port or free_port()
        logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
        logf.close()
        self.wait_ready()

    def stop(self):
        """Stop the process this object started, by its PID only."""
        if not self.alive():
            self.proc = None
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def settle_cache(self):
        """Puts the database file in a known page-cache state: written back, dropped from the cache
        (POSIX_FADV_DONTNEED on this file only), then read once in 1 MiB reads, as `cat data.mdb >
        /dev/null` does. The comparison does this for both servers before measuring writes: with
        slapd's file left as a run of other workloads leaves it, its durable adds measured 22/s at
        11 ms of CPU each (all of it in ext4's buffered-write and writeback paths), and 299/s at 1 ms
        after this (docs/PERFORMANCE.md, "How slapd runs in the comparison")."""
        path = os.path.join(self.data, "data.mdb")
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            while os.read(fd, 1 << 20):
                pass
        finally:
            os.close(fd)

    def memory(self):
        return proc_status(self.pid) if self.alive() else {"VmRSS": 0, "VmHWM": 0, "RssAnon": 0, "RssFile": 0}

    def cpu(self):
        return cpu_seconds(self.pid)

    def disk(self):
        return {"du": du_bytes(self.data), "pages": mdb_pages(self.data),
                "entries": mdb_entries(self.data, self.ID2ENTRY)}


class Slapd(Server):
    ID2ENTRY = "id2e"  # back-mdb's name for its entry table

    def __init__(self, work, loglevel="0", threads=None, name="slapd"):
        super().__init__(name, work)
        self.conf = os.path.join(self.work, "slapd.conf")
        with open(self.conf, "w") as f:
            f.write(slapd_conf(self.work, self.data, loglevel, threads))

    def load(self, ldif):
        """`slapadd -q` then `sync`: timed to a durable database, as `canopy import` (which syncs).

        Plain `slapadd` (a durable commit per entry) took over 15 minutes for 100 000 entries on this
        machine's disk, so the bench loads quickly and then runs a discarded write warm-up on both
        servers (compare's `warm_writes`) before anything is measured."""
        t0 = time.monotonic()
        with open(os.path.join(self.work, "load.log"), "wb") as logf:
            r = subprocess.run(
                ["slapadd", "-q", "-f", self.conf, "-l", ldif], stdout=logf, stderr=logf
            )
            if r.returncode == 0:
                # fsync of the database file only (`sync FILE`), not the whole file system.
                subprocess.run(["sync", os.path.join(self.data, "data.mdb")], check=False)
        self.load_seconds = time.monotonic() - t0
        if r.returncode != 0:
            raise BenchError("slapadd -q failed; see %s/load.log" % self.work)

    def start(self):
        self.port = self.port or free_port()
        self._spawn(["slapd", "-d", "0", "-h", self.url + "/", "-f", self.conf])

    @staticmethod
    def version():
        out = subprocess.run(["slapd", "-VV"], capture_output=True, text=True).stderr
        for part in out.split("$"):
            if "OpenLDAP: slapd" in part:
                words = part.split()
                return "slapd " + words[2] if len(words) > 2 else part.strip()
        return "slapd"


class Canopy(Server):
    ID2ENTRY = "id2entry"

    def __init__(self, work, binary):
        super().__init__("canopy", work)
        self.binary = binary
        self.port = free_port()
        self.conf = os.path.join(self.work, "canopy.toml")
        with open(self.conf, "w") as f:
            f.write(canopy_conf(self.data, self.port))

    def load(self, ldif):
        t0 = time.monotonic()
        with open(os.path.join(self.work, "load.log"), "wb") as logf:
            r = subprocess.run(
                [self.binary, "import", "--config", self.conf, ldif], stdout=logf, stderr=logf
            )
        self.load_seconds = time.monotonic() - t0
        if r.returncode != 0:
            raise BenchError("canopy import failed; see %s/load.log" % self.work)

    def start(self):
        self._spawn([self.binary, "serve", "--config", self.conf])


class Canned(Server):
    """`canopy bench canned`: a server with no storage on canopy's codec and connection loop that answers
    every search with one fixed entry (the scan's `(objectClass=*)` with `scan_entries` of them) and
    every bind with success; the physical limit the two real servers are measured against
    (docs/PERFORMANCE.md, "The physical limit")."""

    def __init__(self, work, binary, scan_entries):
        super().__init__("limit", work)
        self.binary = binary
        self.scan_entries = scan_entries

    def start(self):
        self.port = self.port or free_port()
        self._spawn([self.binary, "bench", "canned", "--listen", "127.0.0.1:%d" % self.port,
                     "--scan-entries", str(self.scan_entries)])

    def disk(self):
        return {"du": 0}
