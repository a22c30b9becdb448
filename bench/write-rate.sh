#!/usr/bin/env bash
# Durable add and modify rates of canopy beside slapd (both fsync every commit), ldclt clients.
# Usage: write-rate.sh CANOPY_BIN CANOPY_DB SLAPD_CONF(with its directory loaded) [THREADS] [SAMPLES]
set -uo pipefail
BIN=$1; CDB=$2; SCONF=$3; THREADS=${4:-"16 64"}; SAMPLES=${5:-2}; RUNS=${RUNS:-1}
SUFFIX=dc=example,dc=com; BASE="ou=Accounting,$SUFFIX"; W=$(mktemp -d /tmp/canopy-write-rate.XXXX)
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
CP=$(port); SP=$(port)
CANOPY_ROOTPW=secret "$BIN" serve --data "$CDB" --listen "ldap://127.0.0.1:$CP" >"$W/canopy.log" 2>&1 & CPID=$!
slapd -d 0 -h "ldap://127.0.0.1:$SP/" -f "$SCONF" >"$W/slapd.log" 2>&1 & SPID=$!
trap 'kill $CPID $SPID 2>/dev/null; wait $CPID $SPID 2>/dev/null' EXIT
for p in $CP $SP; do for _ in $(seq 100); do ldapsearch -x -H ldap://127.0.0.1:$p -b "" -s base dn >/dev/null 2>&1 && break; sleep 0.1; done; done
rate() { sed -n 's/.*Global average rate: .*(\([0-9.]*\)\/sec).*/\1/p' <<<"$1"; }
syncs() { # pid command... : runs command while counting the server's fsync-family syscalls
    local pid=$1; shift
    perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_enter_msync,syscalls:sys_enter_pwrite64,syscalls:sys_enter_pwritev -p "$pid" -o "$W/stat.txt" -- "$@"
}
declare -A NEXT=([canopy]=0 [slapd]=0)
for t in $THREADS; do
  for run in $(seq $RUNS); do
    for s in canopy slapd; do
      if [ $s = canopy ]; then P=$CP; PID=$CPID; else P=$SP; PID=$SPID; fi
      lo=${NEXT[$s]}
      out=$(syncs $PID ldclt -h 127.0.0.1 -p $P -D cn=admin,$SUFFIX -w secret -b "$BASE" -e add,person,incr,noloop,commoncounter \
            -r $lo -R $((lo + 999999)) -f cn=benchXXXXXXX -n $t -N $SAMPLES -q 2>&1)
      r=$(rate "$out"); n=$(grep -c . /dev/null); fs=$(awk -F, '/fdatasync|sys_enter_fsync|msync/ {s+=$1} END {print s}' "$W/stat.txt")
      added=$(awk -v r="$r" -v n=$SAMPLES 'BEGIN{printf "%d", r*n*10}')
      NEXT[$s]=$((lo + added + 1000))
      echo "$s add threads=$t rate=$r/s ops~$added syncs=$fs ops/sync=$(awk -v a=$added -v b=$fs 'BEGIN{if(b>0)printf "%.1f",a/b}') errors: $(grep -c 'error' <<<"$out")"
      echo "$out" >>"$W/ldclt-$s-add-$t.log"
    done
    for s in canopy slapd; do
      if [ $s = canopy ]; then P=$CP; PID=$CPID; else P=$SP; PID=$SPID; fi
      out=$(syncs $PID ldclt -h 127.0.0.1 -p $P -D cn=admin,$SUFFIX -w secret -b "$BASE" -e attreplace=sn:XXXXXXXX,random \
            -r 0 -R 999 -f cn=benchXXXXXXX -n $t -N $SAMPLES -q 2>&1)
      r=$(rate "$out"); fs=$(awk -F, '/fdatasync|sys_enter_fsync|msync/ {s+=$1} END {print s}' "$W/stat.txt")
      ops=$(awk -v r="$r" -v n=$SAMPLES 'BEGIN{printf "%d", r*n*10}')
      echo "$s modify threads=$t rate=$r/s ops~$ops syncs=$fs ops/sync=$(awk -v a=$ops -v b=$fs 'BEGIN{if(b>0)printf "%.1f",a/b}') errors: $(grep -c 'error' <<<"$out")"
      echo "$out" >>"$W/ldclt-$s-mod-$t.log"
    done
  done
done
echo "logs in $W"
