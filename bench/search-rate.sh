#!/usr/bin/env bash
# Exact-uid search rate of Canopy beside Debian's OpenLDAP slapd (back-mdb) on this machine.
#
# Usage: bench/search-rate.sh [N_ENTRIES] [DURATION_SECONDS]
#   N_ENTRIES  directory size (default 10000)
#   DURATION   length of one ldclt run in seconds, rounded down to ldclt's 10 s samples (default 30)
# Environment:
#   CANOPY_BIN  use this canopy binary instead of building the release one
#   THREADS     ldclt thread counts to measure (default "16 64")
#   RUNS        runs per server and thread count (default 3)
#   SEED        data seed for gen-ldif.py (default 42)
#   KEEP=1      keep the work directory (databases, logs, LDIF)
#   PERF=1      record a perf profile of each server during one extra 64-thread run
#   SLAPD_LOGLEVEL  slapd's loglevel (default 0: like canopy, no per-operation log; slapd's own default
#               "stats" writes a syslog line per operation, which costs it throughput, more so without
#               a syslog daemon)
#
# Both servers load the same generated LDIF offline (canopy import, slapadd -q), listen on free loopback
# ports and answer ldclt's `uid=userXXXXXXX` exact searches; runs alternate canopy, slapd, canopy, ...
# so that drift in machine load hits both. The Markdown summary goes to stdout and to WORK/summary.md.
set -euo pipefail

N=${1:-10000}
DURATION=${2:-30}
THREADS=${THREADS:-"16 64"}
RUNS=${RUNS:-3}
SEED=${SEED:-42}
SLAPD_LOGLEVEL=${SLAPD_LOGLEVEL:-0}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
SUFFIX=dc=example,dc=com
SAMPLES=$((DURATION / 10))
[ "$SAMPLES" -ge 1 ] || SAMPLES=1

log() { echo "search-rate: $*" >&2; }

command -v ldclt >/dev/null || {
    log "ldclt missing: installing Debian's 389-ds-base"
    apt-get install -y --no-install-recommends 389-ds-base >&2
}
for tool in slapd slapadd ldapsearch ldclt; do
    command -v "$tool" >/dev/null || { log "$tool not found"; exit 1; }
done

if [ -z "${CANOPY_BIN:-}" ]; then
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
    log "building canopy (release) in $CARGO_TARGET_DIR"
    (cd "$ROOT" && cargo build --release -p canopy >&2)
    CANOPY_BIN=$CARGO_TARGET_DIR/release/canopy
fi

WORK=$(mktemp -d /tmp/canopy-search-rate.XXXXXX)
CANOPY_PID=
SLAPD_PID=
cleanup() {
    for pid in $CANOPY_PID $SLAPD_PID; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in $CANOPY_PID $SLAPD_PID; do
        wait "$pid" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# CPU seconds (user + system) a process has used so far.
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}
wait_ready() { # port pid name
    for _ in $(seq 100); do
        kill -0 "$2" 2>/dev/null || { log "$3 exited early; see $WORK"; exit 1; }
        ldapsearch -x -H "ldap://127.0.0.1:$1" -b "" -s base -LLL dn >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    log "$3 did not answer on port $1"
    exit 1
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

log "work directory $WORK"
LDIF=$WORK/data.ldif
"$PY" "$ROOT/bench/gen-ldif.py" -n "$N" -s "$SEED" -o "$LDIF"
LDIF_BYTES=$(stat -c %s "$LDIF")

# --- load both servers offline ---------------------------------------------------------------------
mkdir -p "$WORK/canopy-data" "$WORK/slapd-data"
t0=$(now)
"$CANOPY_BIN" import --data "$WORK/canopy-data" "$LDIF" >"$WORK/canopy-import.log" 2>&1
t1=$(now)
CANOPY_LOAD=$(elapsed "$t0" "$t1")

cat >"$WORK/slapd.conf" <<CONF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
pidfile $WORK/slapd.pid
argsfile $WORK/slapd.args
loglevel $SLAPD_LOGLEVEL
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 10737418240
suffix "$SUFFIX"
rootdn "cn=admin,$SUFFIX"
rootpw secret
directory $WORK/slapd-data
index objectClass eq
index uid,cn,sn,mail eq,sub
index member,memberUid,uidNumber,gidNumber,entryUUID,entryCSN eq
access to * by * read
CONF
t0=$(now)
slapadd -q -f "$WORK/slapd.conf" -l "$LDIF" >"$WORK/slapadd.log" 2>&1
t1=$(now)
SLAPD_LOAD=$(elapsed "$t0" "$t1")
log "loaded $N entries: canopy import ${CANOPY_LOAD}s, slapadd -q ${SLAPD_LOAD}s"

# --- start both servers ------------------------------------------------------------------------------
CANOPY_PORT=$(free_port)
CANOPY_ROOTPW=secret "$CANOPY_BIN" serve --data "$WORK/canopy-data" \
    --listen "ldap://127.0.0.1:$CANOPY_PORT" >"$WORK/canopy.log" 2>&1 &
CANOPY_PID=$!
SLAPD_PORT=$(free_port)
slapd -d 0 -h "ldap://127.0.0.1:$SLAPD_PORT/" -f "$WORK/slapd.conf" >"$WORK/slapd.log" 2>&1 &
SLAPD_PID=$!
wait_ready "$CANOPY_PORT" "$CANOPY_PID" canopy
wait_ready "$SLAPD_PORT" "$SLAPD_PID" slapd

port_of() { if [ "$1" = canopy ]; then echo "$CANOPY_PORT"; else echo "$SLAPD_PORT"; fi; }
pid_of() { if [ "$1" = canopy ]; then echo "$CANOPY_PID"; else echo "$SLAPD_PID"; fi; }

# ldclt counts a search that finds nothing as a success, so check that the pattern hits real entries.
for server in canopy slapd; do
    for i in 0 $((N / 2)) $((N - 1)); do
        uid=$(printf 'user%07d' "$i")
        hits=$(ldapsearch -x -H "ldap://127.0.0.1:$(port_of $server)" -b "$SUFFIX" -LLL "(uid=$uid)" dn |
            grep -c '^dn:' || true)
        [ "$hits" = 1 ] || { log "$server: uid=$uid gives $hits entries, expected 1"; exit 1; }
    done
done
# Both must send the same entry, or the rates compare different work.
uid=$(printf 'user%07d' $((N / 2)))
for server in canopy slapd; do
    ldapsearch -x -H "ldap://127.0.0.1:$(port_of $server)" -b "$SUFFIX" -LLL -o ldif-wrap=no "(uid=$uid)" |
        sort >"$WORK/entry-$server.ldif"
done
cmp -s "$WORK/entry-canopy.ldif" "$WORK/entry-slapd.ldif" ||
    log "warning: canopy and slapd return different entries for uid=$uid (see $WORK/entry-*.ldif)"

# --- measure -------------------------------------------------------------------------------------------
LDCLT_CMD="ldclt -h 127.0.0.1 -p PORT -N $SAMPLES -q -b $SUFFIX -e esearch,random -f uid=userXXXXXXX -r 0 -R $((N - 1)) -n THREADS"
declare -A RATES CPU
run_ldclt() { # server threads -> rate (searches/s) on stdout
    local out
    out=$(ldclt -h 127.0.0.1 -p "$(port_of "$1")" -N "$SAMPLES" -q -b "$SUFFIX" -e esearch,random \
        -f uid=userXXXXXXX -r 0 -R $((N - 1)) -n "$2" 2>&1) || true
    echo "$out" >>"$WORK/ldclt-$1-$2.log"
    grep -q 'Global no error occurs' <<<"$out" || log "$1 with $2 threads: ldclt reported errors (see $WORK)"
    sed -n 's/.*Global average rate: .*(\([0-9.]*\)\/sec).*/\1/p' <<<"$out"
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for threads in $THREADS; do
    for run in $(seq "$RUNS"); do
        for server in canopy slapd; do
            c0=$(cpu_seconds "$(pid_of $server)")
            rate=$(run_ldclt "$server" "$threads")
            c1=$(cpu_seconds "$(pid_of $server)")
            [ -n "$rate" ] || { log "$server: no rate in ldclt output"; exit 1; }
            RATES[$server,$threads]+="$rate "
            # server CPU microseconds per search, a load-independent cost figure
            CPU[$server,$threads]+="$(awk -v a="$c0" -v b="$c1" -v r="$rate" -v d=$((SAMPLES * 10)) \
                'BEGIN { printf "%.1f", (b - a) * 1e6 / (r * d) }') "
            log "$server threads=$threads run=$run: $rate/s"
        done
    done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

if [ "${PERF:-0}" = 1 ] && command -v perf >/dev/null; then
    for server in canopy slapd; do
        ldclt -h 127.0.0.1 -p "$(port_of $server)" -N 2 -q -b "$SUFFIX" -e esearch,random \
            -f uid=userXXXXXXX -r 0 -R $((N - 1)) -n 64 >/dev/null 2>&1 &
        lpid=$!
        sleep 3
        perf record -q -g -p "$(pid_of $server)" -o "$WORK/perf-$server.data" -- sleep 10 >/dev/null 2>&1 || true
        wait "$lpid" || true
        perf report -q -i "$WORK/perf-$server.data" --no-children -g none --sort dso,sym --stdio 2>/dev/null |
            grep -v '^$' | grep -v '^#' | grep '%' | head -25 >"$WORK/perf-$server.txt" || true
        log "perf profile of $server in $WORK/perf-$server.txt"
    done
fi

CANOPY_RSS=$(ps -o rss= -p "$CANOPY_PID" | tr -d ' ')
SLAPD_RSS=$(ps -o rss= -p "$SLAPD_PID" | tr -d ' ')
CANOPY_DU=$(du -sk "$WORK/canopy-data" | cut -f1)
SLAPD_DU=$(du -k "$WORK/slapd-data/data.mdb" | cut -f1)

# --- report --------------------------------------------------------------------------------------------
{
    echo "### $N entries, $((SAMPLES * 10)) s per run, $RUNS runs per cell"
    echo
    echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -r); load average before $LOAD_BEFORE, after $LOAD_AFTER."
    echo "Versions: $("$CANOPY_BIN" --version 2>/dev/null || echo canopy), $(slapd -VV 2>&1 | sed -n 's/.*\(OpenLDAP: slapd [0-9.]*\).*/\1/p' | head -1), ldclt $(dpkg-query -W -f '${Version}' 389-ds-base 2>/dev/null)."
    echo "Data: $N inetOrgPerson entries + 11, LDIF $((LDIF_BYTES / 1024)) KiB (seed $SEED); slapd loglevel $SLAPD_LOGLEVEL."
    echo
    echo "| server | threads | searches/s per run | median | server CPU µs/search (median) |"
    echo "| --- | ---: | --- | ---: | ---: |"
    for threads in $THREADS; do
        for server in canopy slapd; do
            # shellcheck disable=SC2086
            echo "| $server | $threads | ${RATES[$server,$threads]% } | $(median ${RATES[$server,$threads]}) | $(median ${CPU[$server,$threads]}) |"
        done
    done
    echo
    for threads in $THREADS; do
        # shellcheck disable=SC2086
        echo "Ratio canopy/slapd at $threads threads (medians): $(awk -v a="$(median ${RATES[canopy,$threads]})" \
            -v b="$(median ${RATES[slapd,$threads]})" 'BEGIN { printf "%.2f", a / b }')"
        echo
    done
    echo "| | canopy | slapd |"
    echo "| --- | ---: | ---: |"
    echo "| offline load of $N entries | ${CANOPY_LOAD} s (canopy import) | ${SLAPD_LOAD} s (slapadd -q) |"
    echo "| resident memory after the runs (ps rss) | $((CANOPY_RSS / 1024)) MiB | $((SLAPD_RSS / 1024)) MiB |"
    echo "| database on disk (du) | $((CANOPY_DU / 1024)) MiB (data dir) | $((SLAPD_DU / 1024)) MiB (data.mdb) |"
    echo
    echo "ldclt command: \`$LDCLT_CMD\`"
} | tee "$WORK/summary.md"
