#!/usr/bin/env bash
# A single-node Slurm on localhost, from Debian's packages, for tests and demos.
#
#   scripts/slurm-local.sh start    install (apt) if needed, start munged, slurmctld, slurmd; wait
#   scripts/slurm-local.sh stop     stop the daemons this script started (by PID), nothing else
#   scripts/slurm-local.sh status   say what runs
#   scripts/slurm-local.sh env      print the 'export SLURM_CONF=...' line for your shell
#
# Idempotent: 'start' on a running cluster returns at once. There is no systemd here, so each
# daemon runs in the foreground (-D / -F) as a background process started with setsid; munged
# runs as the munge user. The node advertises KSPTRACE_SLURM_CPUS CPUs (default 8) whatever
# the machine has (SlurmdParameters=config_overrides), so 4- and 8-rank jobs fit, and
# EnforcePartLimits=ALL makes an impossible request fail at submit instead of pending forever.
# Accounting is off: follow jobs with squeue/scontrol, not sacct.
#
# 'start' never leaves a daemon behind when it fails: whatever it started (munged, slurmctld,
# slurmd) is stopped again before it exits. It exits 3 when Slurm cannot run on this machine
# (packages missing and not root, no cgroup filesystem, a daemon that exits at start-up), with
# the reason on stderr, so that tests can skip; 1 on any other error.
#
# Environment: KSPTRACE_SLURM_DIR (default /tmp/ksptrace-slurm), KSPTRACE_SLURM_CPUS,
# KSPTRACE_SLURM_PORT (slurmctld; slurmd uses the next port), KSPTRACE_SLURM_MAX_ARRAY (Slurm's
# MaxArraySize, default 1001 as in Slurm: array indices must stay below it). For tests of the
# failure paths: KSPTRACE_SLURM_MOUNTS (the mount table searched for a cgroup filesystem,
# default /proc/mounts) and KSPTRACE_SLURMD_CONF (the file slurmd reads, default the one written
# here; a bad one makes slurmd exit at start-up).
set -euo pipefail

DIR=${KSPTRACE_SLURM_DIR:-/tmp/ksptrace-slurm}
CPUS=${KSPTRACE_SLURM_CPUS:-8}
PORT=${KSPTRACE_SLURM_PORT:-6817}
MAX_ARRAY=${KSPTRACE_SLURM_MAX_ARRAY:-1001}
MOUNTS=${KSPTRACE_SLURM_MOUNTS:-/proc/mounts}
NODE=$(hostname -s)
CONF="$DIR/slurm.conf"
SLURMD_CONF=${KSPTRACE_SLURMD_CONF:-$CONF}
CANNOT_RUN=3
STARTED=()  # daemons this invocation started, stopped again if 'start' fails
# libpmix-dev: Slurm's mpi/pmix plugin loads the unversioned libpmix.so, which only it provides;
# without it `srun --mpi=pmix` fails on a fresh machine ("can not load PMIx library").
PACKAGES=(slurmctld slurmd slurm-client munge libpmix-dev)
export SLURM_CONF="$CONF"

say() { echo "slurm-local: $*"; }
# shellcheck source=scripts/daemons.sh
source "$(dirname "${BASH_SOURCE[0]}")/daemons.sh"
die() { echo "slurm-local: error: $*" >&2; exit 1; }
cannot() { echo "slurm-local: error: $*" >&2; exit "$CANNOT_RUN"; }

# PID of a daemon we started, if it still runs that program.
ours() {
  local name=$1 pidfile="$DIR/pids/$1.pid" pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "$name" || return 1
  echo "$pid"
}

install_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || cannot "missing Debian packages ${missing[*]}; install them as root"
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null
}

write_config() {
  mkdir -p "$DIR/pids" "$DIR/state" "$DIR/spool" "$DIR/log"
  cat > "$CONF.new" <<EOF
# Written by ksptrace scripts/slurm-local.sh: a single-node Slurm on localhost.
ClusterName=ksptrace
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
EnforcePartLimits=ALL
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
MinJobAge=300
MaxArraySize=$MAX_ARRAY
InactiveLimit=0
KillWait=5
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  if [ -f "$CONF" ] && cmp -s "$CONF" "$CONF.new"; then rm -f "$CONF.new"; else mv "$CONF.new" "$CONF"; fi
}

start_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi
  [ -f /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing; reinstall munge"
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  chmod 0755 /run/munge
  setsid setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F \
    > "$DIR/log/munged.out" 2>&1 < /dev/null &
  echo $! > "$DIR/pids/munged.pid"
  STARTED+=(munged)
  for _ in $(seq 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cannot "munged did not start: $(last_line "$DIR/log/munged.out")"
}

last_line() { tr -d '\r' < "$1" 2>/dev/null | grep -v '^[[:space:]]*$' | tail -n 1 || true; }

# Stop one daemon we started (by the PID in its file) and forget it.
stop_one() {
  local name=$1 pid
  if pid=$(ours "$name"); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    if [ -d "/proc/$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
    say "stopped $name ($pid)"
  fi
  rm -f "$DIR/pids/$name.pid"
}

# On a failed 'start', stop what this invocation started, newest first.
cleanup_started() {
  local rc=$? i
  if [ "$rc" -ne 0 ]; then
    for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do stop_one "${STARTED[i]}" >&2; done
  fi
  exit "$rc"
}

check_cgroup() {
  grep -Eq '^[^ ]+ [^ ]+ cgroup2? ' "$MOUNTS" 2>/dev/null ||
    cannot "no cgroup filesystem in $MOUNTS: slurmd of Slurm 22.05 cannot start"
}

start_daemon() {  # name, args...
  local name=$1; shift
  ours "$name" >/dev/null && return 0
  setsid "/usr/sbin/$name" -D "$@" > "$DIR/log/$name.out" 2>&1 < /dev/null &
  echo $! > "$DIR/pids/$name.pid"
  STARTED+=("$name")
}

wait_ready() {
  for _ in $(seq 150); do
    if scontrol ping 2>/dev/null | grep -q "is UP" &&
       sinfo -h -n "$NODE" -o %T 2>/dev/null | grep -Eq "^(idle|mixed|allocated)"; then
      return 0
    fi
    ours slurmctld >/dev/null ||
      cannot "slurmctld exited at start-up: $(last_line "$DIR/log/slurmctld.out")"
    ours slurmd >/dev/null ||
      cannot "slurmd exited at start-up: $(last_line "$DIR/log/slurmd.out")"
    sleep 0.2
  done
  cannot "the node did not become idle in 30 s; see $DIR/log/"
}

cmd_start() {
  trap cleanup_started EXIT
  check_cgroup
  install_packages
  local before=""
  [ -f "$CONF" ] && before=$(cat "$CONF")
  write_config
  if [ "$before" != "$(cat "$CONF")" ]; then  # a changed config needs our daemons restarted
    stop_one slurmd
    stop_one slurmctld
  fi
  start_munge
  start_daemon slurmctld -f "$CONF" -i
  start_daemon slurmd -f "$SLURMD_CONF" -N "$NODE"
  wait_ready
  scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
  say "up: node $NODE with $CPUS CPUs; export SLURM_CONF=$CONF"
}

cmd_stop() {  # all three at once (scripts/daemons.sh)
  local name pid stopping=()
  for name in slurmd slurmctld munged; do
    if pid=$(ours "$name"); then stopping+=("$name" "$pid"); fi
    rm -f "$DIR/pids/$name.pid"
  done
  stop_together "${stopping[@]}"
}

cmd_status() {
  local name pid
  for name in munged slurmctld slurmd; do
    if pid=$(ours "$name"); then say "$name running ($pid)"; else say "$name not started by this script"; fi
  done
  sinfo 2>/dev/null || true
}

case "${1:-start}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) die "unknown action '$1'; valid actions: start, stop, status, env" ;;
esac
