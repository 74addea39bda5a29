# Sourced by scripts/cluster-local.sh and scripts/pbs-local.sh: the private network of a local
# cluster, one bridge in the root namespace and one network namespace per host, joined by a veth
# pair. The caller sets BRIDGE, NS_PREFIX, VETH_PREFIX and NET (a private /24 such as 10.77.0),
# CREATED=0, and defines say() and cannot().

# make_bridge: the bridge at $NET.1, created (and CREATED=1, so that a failed start removes the
# network again, but never one that a live cluster built) only when it is missing.
make_bridge() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    CREATED=1
    ip link add "$BRIDGE" type bridge || cannot "cannot create the bridge $BRIDGE"
  fi
  ip addr replace "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

# attach_host NS I ADDR: namespace NS (made if missing) on the bridge through veth $VETH_PREFIX$I,
# its end named eth0 with address ADDR/24.
attach_host() {
  local ns=$1 i=$2 addr=$3
  [ -e "/run/netns/$ns" ] || ip netns add "$ns"
  if ! ip link show "$VETH_PREFIX$i" >/dev/null 2>&1; then
    ip link add "$VETH_PREFIX$i" type veth peer name eth0 netns "$ns"
  fi
  ip link set "$VETH_PREFIX$i" master "$BRIDGE" up
  ip -n "$ns" addr replace "$addr/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
}

# kill_namespace NS: kill -9 whatever still runs inside NS (daemons, a job's ranks), for up to
# 10 s: on a loaded machine the killed take time to go.
kill_namespace() {
  local ns=$1 pids
  [ -e "/run/netns/$ns" ] || return 0
  for _ in $(seq 50); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] && return 0
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null || true
    sleep 0.2
  done
  say "warning: processes still in $ns after 10 s: $(ip netns pids "$ns" 2>/dev/null | xargs)" >&2
}

# remove_network VETHS: every namespace named $NS_PREFIX* emptied and deleted, veths 1..VETHS
# and the bridge deleted; what is already gone is skipped.
remove_network() {
  local ns i
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_PREFIX" || true); do
    kill_namespace "$ns"
    ip netns del "$ns" 2>/dev/null || true
  done
  for i in $(seq "$1"); do ip link del "$VETH_PREFIX$i" 2>/dev/null || true; done
  ip link del "$BRIDGE" 2>/dev/null || true
}
