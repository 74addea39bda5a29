# Sourced by scripts/slurm-local.sh and scripts/cluster-local.sh (each defines say()).

# stop_together NAME PID [NAME PID ...]: SIGTERM to every daemon at once (each of Slurm's and
# munge's takes one to two seconds to go), a wait of up to 5 s for all, then SIGKILL to any left;
# one "stopped NAME (PID)" line each.
stop_together() {
  local names=() pids=() pid alive i
  while [ $# -ge 2 ]; do names+=("$1"); pids+=("$2"); shift 2; done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]}"; do [ -d "/proc/$pid" ] && alive=1; done
    [ "$alive" = 1 ] || break
    sleep 0.1
  done
  for ((i = 0; i < ${#pids[@]}; i++)); do
    if [ -d "/proc/${pids[i]}" ]; then kill -9 "${pids[i]}" 2>/dev/null || true; fi
    say "stopped ${names[i]} (${pids[i]})"
  done
}
