#!/usr/bin/env bash
# OpenPBS on this machine, built from the vendored source, for tests and demos.
#
#   scripts/pbs-local.sh build             check the tarball, install Debian packages, build once
#   scripts/pbs-local.sh start [--nodes K] a head (server, scheduler, comm, datastore) and K MoMs
#   scripts/pbs-local.sh stop              stop and remove all of it (daemons, postgres, netns)
#   scripts/pbs-local.sh status            say what runs and what exists
#   scripts/pbs-local.sh env               the exports for PBS's clients and Open MPI
#
# Build: the tarball ../shared/vendor/openpbs-<commit>.tar.gz (checked against SHA256SUMS) is
# built in a temporary folder and installed into ~/.cache/ksptrace/openpbs-<commit> (never the
# repository, never /etc: the profile and systemd files go into the cache too), with the setuid
# bit that pbs_iff and pbs_rcp need (scripts/pbs_build.sh). A lock makes a second builder wait
# for the first. 3 minutes of CPU (396 to 942 s of wall time on 2 loaded cores) once, then instant;
# 'start' builds first if needed.
#
# Network: PBS's TPP layer discards loopback addresses, and this machine's hostname resolves
# only to 127.0.0.1. Rather than patch PBS, every PBS host is a network namespace with a private
# address, as in scripts/cluster-local.sh: the head 'pbshead' (ksptrace-pbs-head, $NET.2) runs
# pbs_server, pbs_sched, pbs_comm and PBS's PostgreSQL; node i 'pbsnode<i>' (ksptrace-pbs-node<i>,
# $NET.1<i>) runs a pbs_mom, pinned to one core. A bridge (ksppbs0, $NET.1) joins them to this
# machine; the namespaces have no default route, so the daemons, which listen on all their
# interfaces, are reachable from this machine only. Each daemon runs in its own UTS namespace
# (its hostname) and mount namespace, where a private hosts file is bound over /etc/hosts; the
# client wrappers in $DIR/bin (qsub, qstat, ...; 'env' puts them first on PATH) do the same, so
# nothing outside this script's folders changes. PBS_HOME of each host lies under
# /var/spool/pbs-ksptrace (pbs_mom refuses a PBS_HOME with a world-writable ancestor such as
# /tmp); PBS_CONF_FILE names this script's pbs.conf (several PBS scripts read /etc/pbs.conf
# otherwise).
#
# 'start' is idempotent (the same number of nodes returns at once; another is stopped and
# rebuilt), waits until every node is free (a job submitted before that is marked "Can Never
# Run" until the next scheduler cycle), and never leaves anything behind when it fails. It exits
# 3 when PBS cannot run here (not root, no network namespaces, PostgreSQL missing, a build or a
# daemon that fails), with the reason on stderr, so that tests skip; 1 on any other error.
#
# Instances: KSPTRACE_PBS_INSTANCE=NAME (1-8 of a-z, 0-9) names a separate local PBS, with its own
# namespaces (ksptrace-pbsi-NAME-head, ...), bridge (kspb-NAME), veths (kspvNAME<i>), run-time
# folder (/tmp/ksptrace-pbs-NAME), PBS_HOME (/var/spool/pbs-ksptrace-NAME) and network (give
# KSPTRACE_PBS_NET; a /24 another link holds is refused): 'stop' and a failed 'start' touch only
# their own instance, so the test suite (which runs its own) never stops a user's PBS. Without
# it, the names above are those of the one default instance.
#
# Environment: KSPTRACE_PBS_DIR (run-time files, default /tmp/ksptrace-pbs), KSPTRACE_PBS_HOME
# (default /var/spool/pbs-ksptrace), KSPTRACE_PBS_PREFIX (the build, default
# ~/.cache/ksptrace/openpbs-<commit>), KSPTRACE_VENDOR_DIR (where the tarball is), KSPTRACE_PBS_NET
# (first three octets of the private /24, default 10.78.78), KSPTRACE_PBS_CPUS (ncpus of each node,
# default 4), KSPTRACE_PBS_PIN (1: node i on one core, the default; 0: all cores).
#
# As root, the run-time folder is made by this script, never through a symbolic link, and must
# be root's and writable by no one else (root runs the wrappers and PBS sources the conf files
# written there); PBS's clients run with /var/tmp and TMPDIR bound to a private folder in it, so
# their /var/tmp/.pbs_last_query_0 can never follow a link another user planted.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
COMMIT=cd7ab5edaf03
INSTANCE=${KSPTRACE_PBS_INSTANCE:-}
if [ -n "$INSTANCE" ]; then
  [[ "$INSTANCE" =~ ^[a-z0-9]{1,8}$ ]] || {
    echo "pbs-local: error: KSPTRACE_PBS_INSTANCE='$INSTANCE' must be 1-8 of a-z, 0-9" >&2; exit 1; }
  DIR=${KSPTRACE_PBS_DIR:-/tmp/ksptrace-pbs-$INSTANCE}
  HOMES=${KSPTRACE_PBS_HOME:-/var/spool/pbs-ksptrace-$INSTANCE}
  BRIDGE=kspb-$INSTANCE
  VETH_PREFIX=kspv$INSTANCE
  NS_PREFIX=ksptrace-pbsi-$INSTANCE-
else
  DIR=${KSPTRACE_PBS_DIR:-/tmp/ksptrace-pbs}
  HOMES=${KSPTRACE_PBS_HOME:-/var/spool/pbs-ksptrace}
  BRIDGE=ksppbs0
  VETH_PREFIX=ksppveth
  NS_PREFIX=ksptrace-pbs-
fi
PREFIX=${KSPTRACE_PBS_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/ksptrace/openpbs-$COMMIT}
NET=${KSPTRACE_PBS_NET:-10.78.78}
CPUS=${KSPTRACE_PBS_CPUS:-4}
PIN=${KSPTRACE_PBS_PIN:-1}
MAX_NODES=4
CANNOT_RUN=3
CREATED=0  # 1 once this invocation built the network (removed again if 'start' fails)
CLIENTS=(qsub qstat qdel qmgr pbsnodes qalter qsig qrls qhold qrerun tracejob)

say() { echo "pbs-local: $*"; }
die() { echo "pbs-local: error: $*" >&2; exit 1; }
cannot() { echo "pbs-local: error: $*" >&2; exit "$CANNOT_RUN"; }

ns_name() { echo "$NS_PREFIX$1"; }           # head | node<i>
host_name() { echo "pbs$1"; }                # pbshead | pbsnode<i>
host_addr() { if [ "$1" = head ]; then echo "$NET.2"; else echo "$NET.1${1#node}"; fi; }
known_nodes() { cat "$DIR/nodes" 2>/dev/null || echo 0; }
hosts_of() { echo head; for ((i = 1; i <= $1; i++)); do echo "node$i"; done; }

# shellcheck source=scripts/pbs_build.sh
source "$HERE/pbs_build.sh"  # install_packages, built, cmd_build
# shellcheck source=scripts/netns.sh
source "$HERE/netns.sh"  # make_bridge, attach_host, kill_namespace, remove_network

# --- network --------------------------------------------------------------------------------

check_machine() {
  [ "$(id -u)" -eq 0 ] || cannot "network namespaces and PBS's daemons need root"
  command -v ip >/dev/null || cannot "iproute2's 'ip' is missing (apt-get install iproute2)"
  command -v unshare >/dev/null && command -v nsenter >/dev/null ||
    cannot "unshare/nsenter are missing (apt-get install util-linux)"
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
    cannot "PostgreSQL's server is missing (apt-get install postgresql): PBS keeps its state in it"
  getent passwd postgres >/dev/null || cannot "no 'postgres' user: reinstall postgresql"
  local probe="${NS_PREFIX}probe$$" why
  why=$(ip netns add "$probe" 2>&1) || cannot "cannot create a network namespace: ${why:-ip netns add failed}"
  if ! why=$(ip netns exec "$probe" unshare --uts --mount true 2>&1); then
    ip netns del "$probe" 2>/dev/null || true
    cannot "cannot create UTS and mount namespaces inside a network namespace: ${why:-unshare failed}"
  fi
  ip netns del "$probe"
  local d=$HOMES
  while [ "$d" != / ] && [ -n "$d" ]; do  # pbs_mom refuses such a PBS_HOME
    if [ -e "$d" ] && [ -n "$(find "$d" -maxdepth 0 -perm -0002 2>/dev/null)" ]; then
      die "$d is world-writable: pbs_mom refuses a PBS_HOME under it; set KSPTRACE_PBS_HOME to a private path such as /var/spool/pbs-ksptrace"
    fi
    d=$(dirname "$d")
  done
  [[ "$NET" =~ ^(10\.[0-9]+\.[0-9]+|192\.168\.[0-9]+|172\.(1[6-9]|2[0-9]|3[01])\.[0-9]+)$ ]] ||
    die "KSPTRACE_PBS_NET=$NET is not the start of a private /24 (10.x.y, 172.16-31.y, 192.168.y)"
  local holder  # another instance's (or anything's) network: never shared
  holder=$(ip -o -4 addr show 2>/dev/null | awk -v net="$NET." -v own="$BRIDGE" \
    'index($4, net) == 1 && $2 != own { print $2; exit }')
  [ -z "$holder" ] ||
    cannot "$NET.0/24 is already used by link $holder (another local PBS?); set KSPTRACE_PBS_NET to a free private /24"
}

make_network() {  # K
  local k=$1 h i=0
  make_bridge
  for h in $(hosts_of "$k"); do
    i=$((i + 1))
    attach_host "$(ns_name "$h")" "$i" "$(host_addr "$h")"
  done
}

# --- configuration --------------------------------------------------------------------------

# own_dir D: D made if missing, and refused unless it is a real folder (not a symbolic link) of
# this user that no one else can write: root runs what is written there.
own_dir() {
  local d=$1
  mkdir -m 0755 -- "$d" 2>/dev/null || true
  if [ -L "$d" ] || [ ! -d "$d" ] || [ ! -O "$d" ] || [ -n "$(find "$d" -maxdepth 0 -perm /022)" ]; then
    die "$d is not a folder of $(id -un) that only it can write (a symbolic link, another user's, or writable by others); remove it or set KSPTRACE_PBS_DIR to a folder of yours"
  fi
}

write_config() {  # K
  local k=$1 h
  own_dir "$DIR"
  own_dir "$DIR/bin"
  own_dir "$DIR/log"
  own_dir "$DIR/tmp"
  chmod 0700 "$DIR/tmp"
  # the jobs' TMPDIR (MoM's $tmpdir, /var/tmp by default, where a qdel left pbs.<job id>):
  # sticky and open to all like /var/tmp, emptied by 'stop'
  mkdir -p "$DIR/jobtmp"
  [ ! -L "$DIR/jobtmp" ] && [ -d "$DIR/jobtmp" ] || die "$DIR/jobtmp is not a folder"
  chmod 1777 "$DIR/jobtmp"
  if [ -n "$INSTANCE" ]; then  # the head's PostgreSQL socket folder (see on_host)
    mkdir -p -m 0755 "$DIR/pgsock"  # in $DIR, which only root can write
    chown -h postgres:postgres "$DIR/pgsock"
  fi
  mkdir -p "$HOMES"
  chmod 0755 "$HOMES"
  {
    echo "127.0.0.1 localhost"
    echo "$NET.1 $(hostname)"
    for h in $(hosts_of "$k"); do echo "$(host_addr "$h") $(host_name "$h")"; done
  } > "$DIR/hosts"
  for h in $(hosts_of "$k"); do
    {
      echo "PBS_EXEC=$PREFIX"
      echo "PBS_HOME=$HOMES/$h"
      echo "PBS_SERVER=$(host_name head)"
      echo "PBS_START_SERVER=$([ "$h" = head ] && echo 1 || echo 0)"
      echo "PBS_START_SCHED=$([ "$h" = head ] && echo 1 || echo 0)"
      echo "PBS_START_COMM=$([ "$h" = head ] && echo 1 || echo 0)"
      echo "PBS_START_MOM=$([ "$h" = head ] && echo 0 || echo 1)"
      echo "PBS_LEAF_ROUTERS=$(host_name head)"
    } > "$DIR/$h.conf"
  done
  # The clients: PBS_SERVER resolves through $DIR/hosts (see the wrappers).
  printf 'PBS_EXEC=%s\nPBS_HOME=%s\nPBS_SERVER=%s\n' "$PREFIX" "$HOMES/head" \
    "$(host_name head)" > "$DIR/client.conf"
  for h in "${CLIENTS[@]}"; do
    cat > "$DIR/bin/$h" <<EOF
#!/bin/sh
# Written by ksptrace scripts/pbs-local.sh: $h against the local PBS (its names resolve
# through $DIR/hosts, bound over /etc/hosts in a mount namespace of this command only).
export PBS_CONF_FILE=$DIR/client.conf TMPDIR=$DIR/tmp PBS_TMPDIR=$DIR/tmp
exec unshare --mount --propagation private /bin/sh -c 'mount --bind "\$0" /etc/hosts && mount --bind "\$TMPDIR" /var/tmp && exec "\$@"' $DIR/hosts $PREFIX/bin/$h "\$@"
EOF
    chmod 0755 "$DIR/bin/$h"
  done
  # Open MPI's remote launch through PBS's task manager (Debian's Open MPI has no tm support):
  # its rsh launcher hands the agent a command line meant for a remote shell (quoted words, a
  # leading blank), which pbs_tmrsh would exec as is; a shell on the far side parses it, as
  # ssh's does.
  cat > "$DIR/bin/pbs-tmrsh-shell" <<EOF
#!/bin/sh
# Written by ksptrace scripts/pbs-local.sh: 'pbs-tmrsh-shell HOST WORDS...' runs WORDS as one
# shell command line on HOST, a node of this PBS job, through pbs_tmrsh (like 'ssh HOST WORDS').
host=\$1
shift
exec $PREFIX/bin/pbs_tmrsh "\$host" /bin/sh -c "\$*"
EOF
  chmod 0755 "$DIR/bin/pbs-tmrsh-shell"
  echo "$k" > "$DIR/nodes"
}

# Run a command as host h: its netns, its hostname, the private hosts file, its pbs.conf. A
# named instance's head has its own PostgreSQL socket folder too: every instance's datastore
# listens on port 15007 in its own netns, but the socket file lies in /var/run/postgresql.
on_host() {  # h cmd...
  local h=$1 pin=() cores sock=""; shift
  if [ "$h" != head ] && [ "$PIN" = 1 ]; then
    cores=$(nproc --all); pin=(taskset -c "$(( (${h#node} - 1) % cores ))")
  fi
  if [ "$h" = head ] && [ -n "$INSTANCE" ] && [ -d /var/run/postgresql ]; then
    sock=$DIR/pgsock
  fi
  PBS_CONF_FILE="$DIR/$h.conf" "${pin[@]}" nsenter --net="/run/netns/$(ns_name "$h")" \
    unshare --uts --mount --propagation private /bin/sh -c \
    'mount --bind "$1" /etc/hosts && hostname "$2" &&
     { [ -z "$3" ] || mount --bind "$3" /var/run/postgresql; } && shift 3 && exec "$@"' sh \
    "$DIR/hosts" "$(host_name "$h")" "$sock" "$@"
}

client() { PATH="$DIR/bin:$PATH" "$@"; }

write_mom_config() {  # h
  local h=$1
  cat > "$HOMES/$h/mom_priv/config" <<EOF
\$clienthost $(host_name head)
\$usecp *:/ /
\$tmpdir $DIR/jobtmp
EOF
}

# PBS_HOME is made by PBS's own pbs_habitat (the head's with its datastore: initdb, 10 s). The
# daemons are started directly, not through pbs_init.d, which starts them in the background and
# writes /var/tmp/pbs_boot_check right after a boot.
start_host() {  # h
  local h=$1 log="$DIR/log/$1.out"
  if [ ! -f "$HOMES/$h/pbs_version" ] || { [ "$h" = head ] && [ ! -d "$HOMES/head/datastore" ]; }; then
    on_host "$h" "$PREFIX/libexec/pbs_habitat" >> "$log" 2>&1 < /dev/null ||
      cannot "pbs_habitat failed on $(host_name "$h"): $(last_line "$log")"
  fi
  if [ "$h" = head ]; then
    on_host head /bin/sh -c '"$1/sbin/pbs_comm" && "$1/sbin/pbs_sched" && "$1/sbin/pbs_server"' \
      sh "$PREFIX" >> "$log" 2>&1 < /dev/null ||
      cannot "PBS's head did not start: $(last_line "$log"); see $HOMES/head/*_logs"
  else
    write_mom_config "$h"
    on_host "$h" "$PREFIX/sbin/pbs_mom" >> "$log" 2>&1 < /dev/null ||
      cannot "pbs_mom did not start on $(host_name "$h"): $(last_line "$log")"
  fi
}

last_line() { tr -d '\r' < "$1" 2>/dev/null | grep -v '^[[:space:]]*$' | tail -n 1 || true; }

# On the head itself: only root of the server's host manages the server at first.
qmgr_head() { on_host head "$PREFIX/bin/qmgr" -c "$1" > "$DIR/log/qmgr.out" 2>&1 < /dev/null ||
  cannot "qmgr -c '$1' failed: $(head -n 1 "$DIR/log/qmgr.out" | sed 's/^qmgr obj=[^:]*: //')"; }

configure_server() {  # K
  local k=$1 i
  qmgr_head "set server acl_roots = root"  # root may submit (the tests and demos run as root)
  qmgr_head "set server flatuid = true"     # root@<this machine> is root@pbshead
  qmgr_head "set sched scheduler_iteration = 10"
  qmgr_head "set server job_history_enable = true"  # qstat -x shows finished jobs
  for ((i = 1; i <= k; i++)); do
    on_host head "$PREFIX/bin/pbsnodes" "pbsnode$i" > /dev/null 2>&1 < /dev/null ||
      qmgr_head "create node pbsnode$i"
    qmgr_head "set node pbsnode$i resources_available.ncpus = $CPUS"
  done
  # nodes of an earlier, larger start (kept in the datastore) would stay down, and a job that
  # asks for them would wait forever (issue 66)
  for ((i = k + 1; i <= MAX_NODES; i++)); do
    if on_host head "$PREFIX/bin/pbsnodes" "pbsnode$i" > /dev/null 2>&1 < /dev/null; then
      qmgr_head "delete node pbsnode$i"
    fi
  done
}

wait_free() {  # K
  local k=$1 free
  for _ in $(seq 300); do
    free=$(client pbsnodes -a 2>/dev/null | grep -c '^ *state = free' || true)
    [ "$free" -ge "$k" ] && return 0
    sleep 0.2
  done
  cannot "the $k nodes did not become free in 60 s; see $HOMES/*/mom_logs and server_logs"
}

cleanup_failed() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then stop_all >&2; fi
  exit "$rc"
}

cmd_start() {  # K
  local k=$1 i
  [[ "$k" =~ ^[1-9][0-9]*$ ]] && [ "$k" -le "$MAX_NODES" ] || die "--nodes must be 1..$MAX_NODES, got '$k'"
  [ "$(id -u)" -eq 0 ] || cannot "network namespaces and PBS's daemons need root"
  install_packages "${RUN_PACKAGES[@]}"
  check_machine
  cmd_build
  if [ "$(known_nodes)" = "$k" ] && running head && client pbsnodes -a >/dev/null 2>&1; then
    say "already up: $k node(s)"
    return 0
  fi
  [ "$(known_nodes)" != 0 ] && stop_all
  trap cleanup_failed EXIT
  write_config "$k"
  make_network "$k"
  start_host head
  configure_server "$k"
  for ((i = 1; i <= k; i++)); do start_host "node$i"; done
  wait_free "$k"
  trap - EXIT
  say "up: pbshead at $NET.2 and $k node(s) pbsnode1..pbsnode$k with $CPUS CPUs each; eval \"\$($0 env)\""
}

running() { [ -e "/run/netns/$(ns_name "$1")" ] && [ -n "$(ip netns pids "$(ns_name "$1")" 2>/dev/null)" ]; }

stop_all() {
  local h k
  k=$(known_nodes)
  # PBS's own stop on every host at once (each takes seconds; the server stops its datastore),
  # then whatever is left in the namespaces is killed
  for h in head $(seq -f "node%g" "$MAX_NODES"); do
    if running "$h" && [ -f "$DIR/$h.conf" ]; then
      on_host "$h" "$PREFIX/libexec/pbs_init.d" stop > "$DIR/log/$h.stop" 2>&1 < /dev/null &
    fi
  done
  wait
  for h in head $(seq -f "node%g" "$MAX_NODES"); do kill_namespace "$(ns_name "$h")"; done
  remove_network $((MAX_NODES + 1))
  rm -f "$DIR/nodes"
  if [ -d "$DIR/jobtmp" ] && [ ! -L "$DIR/jobtmp" ]; then  # what killed jobs left (qdel)
    find "$DIR/jobtmp" -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null || true
  fi
  [ "$k" = 0 ] || say "stopped: the head and $k node(s), their namespaces and the bridge"
}

cmd_status() {
  local ns
  built && say "built: $(cat "$PREFIX/.ksptrace-built") in $PREFIX" || say "not built ($PREFIX)"
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_PREFIX" || true); do
    say "namespace $ns: $(ip netns pids "$ns" 2>/dev/null | wc -l) processes"
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then say "bridge $BRIDGE present"; fi
  if running head; then client pbsnodes -aS 2>/dev/null || true; fi
}

cmd_env() {
  echo "export PATH=$DIR/bin:\$PATH:$PREFIX/bin"
  echo "export PBS_CONF_FILE=$DIR/client.conf"
  # Debian's Open MPI has no tm support: its mpiexec starts remote ranks through pbs_tmrsh (the
  # MoMs' task manager; see write_config), over the private network only.
  echo "export OMPI_MCA_plm_rsh_agent=$DIR/bin/pbs-tmrsh-shell"
  echo "export OMPI_MCA_btl=self,vader,tcp"
  echo "export OMPI_MCA_btl_tcp_if_include=$NET.0/24"
  echo "export OMPI_MCA_oob_tcp_if_include=$NET.0/24"
  echo "export OMPI_MCA_mpi_yield_when_idle=1"
}

action=${1:-start}
shift || true
nodes=1
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) [ $# -ge 2 ] || die "--nodes needs a number"; nodes=$2; shift 2 ;;
    --nodes=*) nodes=${1#--nodes=}; shift ;;
    *) die "unexpected argument '$1'" ;;
  esac
done

case "$action" in
  build) cmd_build ;;
  start) cmd_start "$nodes" ;;
  stop) stop_all ;;
  status) cmd_status ;;
  env) cmd_env ;;
  *) die "unknown action '$action'; valid actions: build, start, stop, status, env" ;;
esac
