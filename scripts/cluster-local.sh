#!/usr/bin/env bash
# A Slurm cluster of K nodes on this machine: each node its own network namespace.
#
#   scripts/cluster-local.sh start [--nodes K]  bridge, K namespaces, munged, slurmctld, K slurmd
#   scripts/cluster-local.sh stop               stop and remove all of it (daemons, jobs, netns)
#   scripts/cluster-local.sh status             say what runs and what exists
#   scripts/cluster-local.sh env                the exports for Slurm's and Open MPI's clients
#   scripts/cluster-local.sh kill-node NODE     crash a node: kill -9 every process in its netns
#   scripts/cluster-local.sh cut-link NODE      take its link down (restore-link NODE: up again)
#
# Node i (1..K, K <= 4; default 2) is network namespace ksptrace-node<i>, joined by a veth pair
# to the bridge kspbr0 on a private /24 (10.77.77.0/24: the bridge is .1, node i is .1<i>); its
# slurmd runs in its own UTS namespace with hostname node<i> ('slurmd -N node<i>'), pinned to
# one CPU of this machine (node i on CPU (i-1) mod cores), so a node's ranks share that core as
# they would share a real node's, and more ranks than its core are real oversubscription. The
# node namespaces have no default route: nothing in them reaches any address but the bridge's.
# slurmctld and a munged with its own socket run in the root namespace, on the bridge address.
# Open MPI ranks of one job talk over TCP between nodes (the bridge) and through shared memory
# (vader) inside a node: 'env' prints the OMPI_MCA_* lines that say so.
#
# Ports and folders differ from scripts/slurm-local.sh (6837/6838, /tmp/ksptrace-cluster), so
# both can run at once. 'start' is idempotent (a running cluster of the same size returns at
# once; another size is stopped and rebuilt) and starts again any slurmd that is not running
# (so 'start' after kill-node brings the node back). It never leaves anything behind when it
# fails: it stops what it started and removes what it created. It exits 3 when the cluster
# cannot run on this machine (not root, no network namespaces, no cgroup filesystem, packages
# missing, a daemon that exits at start-up), with the reason on stderr, so that tests skip.
#
# Environment: KSPTRACE_CLUSTER_DIR (default /tmp/ksptrace-cluster), KSPTRACE_CLUSTER_PORT
# (slurmctld, default 6837; slurmd uses the next), KSPTRACE_CLUSTER_NET (first three octets of
# the private /24, default 10.77.77), KSPTRACE_CLUSTER_CPUS (CPUs each node advertises, default
# 4), KSPTRACE_CLUSTER_PIN (1: pin node i to one core, the default; 0: all cores),
# KSPTRACE_CLUSTER_SLURMD_TIMEOUT (seconds before slurmctld calls a silent node down, default
# 10), KSPTRACE_CLUSTER_MOUNTS (mount table searched for cgroup, default /proc/mounts),
# KSPTRACE_CLUSTER_SLURMD_CONF (a configuration for slurmd instead of the written one: tests).
set -euo pipefail

DIR=${KSPTRACE_CLUSTER_DIR:-/tmp/ksptrace-cluster}
PORT=${KSPTRACE_CLUSTER_PORT:-6837}
NET=${KSPTRACE_CLUSTER_NET:-10.77.77}
CPUS=${KSPTRACE_CLUSTER_CPUS:-4}
PIN=${KSPTRACE_CLUSTER_PIN:-1}
SLURMD_TIMEOUT=${KSPTRACE_CLUSTER_SLURMD_TIMEOUT:-10}
MOUNTS=${KSPTRACE_CLUSTER_MOUNTS:-/proc/mounts}
BRIDGE=kspbr0
NS_PREFIX=ksptrace-node
VETH_PREFIX=kspveth
MAX_NODES=4
CONF="$DIR/slurm.conf"
SLURMD_CONF=${KSPTRACE_CLUSTER_SLURMD_CONF:-$CONF}
MUNGE_SOCKET="$DIR/munge/munge.socket"
CANNOT_RUN=3
STARTED=()  # daemons this invocation started, stopped again if 'start' fails
CREATED=0   # 1 once this invocation created the bridge (the network is removed if 'start' fails)
PACKAGES=(slurmctld slurmd slurm-client munge libpmix-dev iproute2 util-linux)
export SLURM_CONF="$CONF"

say() { echo "cluster-local: $*"; }
# shellcheck source=scripts/daemons.sh
source "$(dirname "${BASH_SOURCE[0]}")/daemons.sh"
# shellcheck source=scripts/netns.sh
source "$(dirname "${BASH_SOURCE[0]}")/netns.sh"
die() { echo "cluster-local: error: $*" >&2; exit 1; }
cannot() { echo "cluster-local: error: $*" >&2; exit "$CANNOT_RUN"; }
last_line() { tr -d '\r' < "$1" 2>/dev/null | grep -v '^[[:space:]]*$' | tail -n 1 || true; }
# Why slurmd of node i stopped: its stderr's last line, else the last error or fatal line its log
# holds since its latest start.
slurmd_reason() {  # i
  local why
  why=$(last_line "$DIR/log/slurmd-node$1.out")
  [ -n "$why" ] || why=$(awk '/slurmd version .* started/ { last = "" } /error|fatal/ { last = $0 }
    END { print last }' "$DIR/log/slurmd-node$1.log" 2>/dev/null || true)
  echo "${why:-no message; see $DIR/log/slurmd-node$1.log}"
}

node_name() { echo "node$1"; }
ns_name() { echo "$NS_PREFIX$1"; }
node_addr() { echo "$NET.1$1"; }
known_nodes() { cat "$DIR/nodes" 2>/dev/null || echo 0; }
node_index() {  # node<i> -> i, or die
  local name=$1 k
  k=$(known_nodes)
  [[ "$name" =~ ^node([1-9])$ ]] && [ "${BASH_REMATCH[1]}" -le "$k" ] ||
    die "unknown node '$name'; the cluster has node1..node$k"
  echo "${BASH_REMATCH[1]}"
}

# PID of a daemon we started, if it still runs that program.
ours() {
  local name=$1 pidfile="$DIR/pids/$1.pid" pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "${2:-$name}" || return 1
  echo "$pid"
}

check_machine() {
  [ "$(id -u)" -eq 0 ] || cannot "network namespaces and bridges need root"
  command -v ip >/dev/null || cannot "iproute2's 'ip' is missing (apt-get install iproute2)"
  command -v unshare >/dev/null && command -v nsenter >/dev/null ||
    cannot "unshare/nsenter are missing (apt-get install util-linux)"
  grep -Eq '^[^ ]+ [^ ]+ cgroup2? ' "$MOUNTS" 2>/dev/null ||
    cannot "no cgroup filesystem in $MOUNTS: slurmd of Slurm 22.05 cannot start"
  local probe="${NS_PREFIX}probe$$" why
  if ! why=$(ip netns add "$probe" 2>&1); then
    cannot "cannot create a network namespace: ${why:-ip netns add failed}"
  fi
  if ! why=$(ip netns exec "$probe" unshare --uts true 2>&1); then
    ip netns del "$probe" 2>/dev/null || true
    cannot "cannot create a UTS namespace inside a network namespace: ${why:-unshare failed}"
  fi
  ip netns del "$probe"
  [[ "$NET" =~ ^(10\.[0-9]+\.[0-9]+|192\.168\.[0-9]+|172\.(1[6-9]|2[0-9]|3[01])\.[0-9]+)$ ]] ||
    die "KSPTRACE_CLUSTER_NET=$NET is not the start of a private /24 (10.x.y, 172.16-31.y, 192.168.y)"
}

install_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null || cannot "could not install ${missing[*]}"
}

write_config() {  # K
  local k=$1 i names
  mkdir -p "$DIR/pids" "$DIR/state" "$DIR/spool" "$DIR/log"
  names="node[1-$k]"
  [ "$k" -eq 1 ] && names=node1
  {
    cat <<EOF
# Written by ksptrace scripts/cluster-local.sh: $k nodes, each its own network namespace.
ClusterName=ksptracecluster
SlurmctldHost=$(hostname -s)($NET.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
TmpFS=$DIR/tmp/%n
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
InactiveLimit=0
KillWait=5
KillOnBadExit=1
JobRequeue=0
SlurmdTimeout=$SLURMD_TIMEOUT
MessageTimeout=5
EOF
    for ((i = 1; i <= k; i++)); do
      echo "NodeName=node$i NodeAddr=$(node_addr "$i") NodeHostname=node$i CPUs=$CPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP"
  } > "$CONF.new"
  mv "$CONF.new" "$CONF"
  echo "$k" > "$DIR/nodes"
}

# --- network: a bridge in the root namespace, a veth pair and a namespace per node ----------

make_network() {  # K
  local k=$1 i
  make_bridge
  for ((i = 1; i <= k; i++)); do attach_host "$(ns_name "$i")" "$i" "$(node_addr "$i")"; done
}

# --- daemons --------------------------------------------------------------------------------

start_munge() {
  ours munged >/dev/null && return 0
  [ -f /etc/munge/munge.key ] || cannot "/etc/munge/munge.key is missing; reinstall munge"
  mkdir -p "$DIR/munge"
  chown munge:munge "$DIR/munge"
  chmod 0755 "$DIR/munge"
  setsid setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged -F \
    --socket="$MUNGE_SOCKET" --pid-file="$DIR/munge/munged.pid" \
    --seed-file="$DIR/munge/munged.seed" --log-file="$DIR/munge/munged.log" \
    > "$DIR/log/munged.out" 2>&1 < /dev/null &
  echo $! > "$DIR/pids/munged.pid"
  STARTED+=(munged)
  for _ in $(seq 50); do
    munge -S "$MUNGE_SOCKET" -n </dev/null 2>/dev/null |
      unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cannot "munged did not start: $(last_line "$DIR/log/munged.out")"
}

start_slurmctld() {
  ours slurmctld >/dev/null && return 0
  setsid /usr/sbin/slurmctld -D -i -f "$CONF" > "$DIR/log/slurmctld.out" 2>&1 < /dev/null &
  echo $! > "$DIR/pids/slurmctld.pid"
  STARTED+=(slurmctld)
}

# slurmd of node i: in its network namespace, a new UTS namespace named node<i>, on one core.
start_slurmd() {  # i
  local i=$1 name cores pin=()
  name=$(node_name "$i")
  ours "slurmd-$name" slurmd >/dev/null && return 0
  kill_namespace "$(ns_name "$i")"  # what a crashed node left (its job steps)
  cores=$(nproc --all)
  [ "$PIN" = 1 ] && pin=(taskset -c "$(((i - 1) % cores))")
  mkdir -p "$DIR/spool/$name" "$DIR/tmp/$name"
  setsid "${pin[@]}" nsenter --net="/run/netns/$(ns_name "$i")" unshare --uts \
    /bin/bash -c 'hostname "$1" && exec /usr/sbin/slurmd -D -f "$2" -N "$1"' slurmd "$name" \
    "$SLURMD_CONF" > "$DIR/log/slurmd-$name.out" 2>&1 < /dev/null &
  echo $! > "$DIR/pids/slurmd-$name.pid"
  STARTED+=("slurmd-$name")
}

stop_one() {
  local name=$1 pid
  if pid=$(ours "$name" "${2:-$name}"); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    if [ -d "/proc/$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
    say "stopped $name ($pid)"
  fi
  rm -f "$DIR/pids/$name.pid"
}

cleanup_started() {
  local rc=$? i name
  if [ "$rc" -ne 0 ]; then
    for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
      name=${STARTED[i]}
      if [[ "$name" == slurmd-* ]]; then stop_one "$name" slurmd >&2; else stop_one "$name" >&2; fi
    done
    [ "$CREATED" = 1 ] && remove_network "$MAX_NODES"
  fi
  exit "$rc"
}

# A slurmd that exits at start-up is started again, twice at most (a loaded machine, a node
# restarted right after a crash); the third exit is the reason the cluster cannot run.
wait_ready() {  # K
  local k=$1 i up tries=()
  for ((i = 1; i <= k; i++)); do tries[i]=1; done
  for _ in $(seq 150); do
    up=$(sinfo -h -N -o '%N %T' 2>/dev/null | grep -Ec ' (idle|mixed|allocated)$' || true)
    if scontrol ping 2>/dev/null | grep -q "is UP" && [ "$up" -ge "$k" ]; then return 0; fi
    ours slurmctld >/dev/null ||
      cannot "slurmctld exited at start-up: $(last_line "$DIR/log/slurmctld.out")"
    for ((i = 1; i <= k; i++)); do
      ours "slurmd-node$i" slurmd >/dev/null && continue
      [ "${tries[i]}" -lt 3 ] ||
        cannot "slurmd of node$i exited at start-up (3 tries): $(slurmd_reason "$i")"
      say "slurmd of node$i exited at start-up ($(slurmd_reason "$i")); starting it again" >&2
      tries[i]=$((tries[i] + 1))
      sleep 1
      start_slurmd "$i"
    done
    sleep 0.2
  done
  cannot "the $k nodes did not all become idle in 30 s; see $DIR/log/"
}

cmd_start() {
  local k=$1 i
  trap cleanup_started EXIT
  [[ "$k" =~ ^[1-9][0-9]*$ ]] && [ "$k" -le "$MAX_NODES" ] ||
    die "--nodes must be 1..$MAX_NODES, got '$k'"
  [ "$(id -u)" -eq 0 ] || cannot "network namespaces and bridges need root"
  install_packages  # first: on a fresh machine 'ip' itself (iproute2) may be what is missing
  check_machine
  local before=""
  [ -f "$CONF" ] && [ -f "$DIR/nodes" ] && before=$(cat "$CONF")
  write_config "$k"
  if [ -n "$before" ] && [ "$before" != "$(cat "$CONF")" ]; then
    say "rebuilding: the configuration changed (nodes, ports, CPUs or timeouts)"
    cmd_stop
    write_config "$k"
  fi
  make_network "$k"
  start_munge
  start_slurmctld
  for ((i = 1; i <= k; i++)); do start_slurmd "$i"; done
  wait_ready "$k"
  for i in $(sinfo -h -N -t down,drain -o %N 2>/dev/null || true); do  # e.g. after a crash
    scontrol update nodename="$i" state=resume >/dev/null 2>&1 || true
  done
  say "up: $k nodes (node1..node$k at $(node_addr 1)..$(node_addr "$k"), $CPUS CPUs each); eval \"\$($0 env)\""
}

cmd_stop() {  # every daemon at once (scripts/daemons.sh), then the namespaces and the network
  local i name pid stopping=()
  for name in $(seq -f "slurmd-node%g" "$MAX_NODES") slurmctld munged; do
    if pid=$(ours "$name" "${name%%-*}"); then stopping+=("$name" "$pid"); fi
    rm -f "$DIR/pids/$name.pid"
  done
  stop_together "${stopping[@]}"
  for i in $(seq "$MAX_NODES"); do kill_namespace "$(ns_name "$i")"; done
  remove_network "$MAX_NODES"
  rm -f "$DIR/nodes"
}

cmd_status() {
  local name pid ns i
  for name in munged slurmctld; do
    if pid=$(ours "$name"); then say "$name running ($pid)"; else say "$name not running"; fi
  done
  for i in $(seq "$MAX_NODES"); do
    if pid=$(ours "slurmd-node$i" slurmd); then say "slurmd of node$i running ($pid)"; fi
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_PREFIX" || true); do
    say "namespace $ns: $(ip netns pids "$ns" 2>/dev/null | wc -l) processes"
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then say "bridge $BRIDGE present"; fi
  if ours slurmctld >/dev/null; then sinfo -N 2>/dev/null || true; fi
}

cmd_env() {
  echo "export SLURM_CONF=$CONF"
  echo "export OMPI_MCA_btl=self,vader,tcp"
  echo "export OMPI_MCA_btl_tcp_if_include=$NET.0/24"
  echo "export OMPI_MCA_oob_tcp_if_include=$NET.0/24"
  # A node is one core: its ranks must yield when they wait (mpiexec --oversubscribe does this).
  echo "export OMPI_MCA_mpi_yield_when_idle=1"
}

action=${1:-start}
shift || true
nodes=2
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) [ $# -ge 2 ] || die "--nodes needs a number"; nodes=$2; shift 2 ;;
    --nodes=*) nodes=${1#--nodes=}; shift ;;
    *) if [ -z "${target:-}" ]; then target=$1; shift; else die "unexpected argument '$1'"; fi ;;
  esac
done

case "$action" in
  start) cmd_start "$nodes" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) cmd_env ;;
  kill-node)
    i=$(node_index "${target:-}")
    kill_namespace "$(ns_name "$i")"
    rm -f "$DIR/pids/slurmd-node$i.pid"
    say "node$i crashed: every process in $(ns_name "$i") killed" ;;
  cut-link) i=$(node_index "${target:-}"); ip link set "$VETH_PREFIX$i" down; say "node$i cut off" ;;
  restore-link) i=$(node_index "${target:-}"); ip link set "$VETH_PREFIX$i" up; say "node$i back" ;;
  *) die "unknown action '$action'; valid actions: start, stop, status, env, kill-node, cut-link, restore-link" ;;
esac
