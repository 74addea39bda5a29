#!/bin/bash

# ksptrace campaign golden: 8 run(s) of 8, one per task.
# Campaign file sha256 e8f86e871a5cbbf70812db0b19d0d228f8c0c06ef41d47661a968e567fda31c9
# Paths are relative to the campaign's output folder.
set -u

# set-up lines from the campaign file
module load petsc/3.18
export OMP_NUM_THREADS=1

cd "$(dirname "$0")/../.." || exit 1
export KSPTRACE_CAMPAIGN=golden
export KSPTRACE_CAMPAIGN_HASH=e8f86e871a5cbbf70812db0b19d0d228f8c0c06ef41d47661a968e567fda31c9
task=${1:?usage: bash SCRIPT TASK_INDEX}
case "$task" in
  0) run_id=eb75ca4f4790 repetition=0  # laplace1d n=100000 gmres/jacobi P=64 K=500
     cmd=(ksptrace run --problem laplace1d --n 100000 --ksp gmres --pc jacobi --iterations 500 --restart 40 --out traces/eb75ca4f4790.h5 --overwrite --np 64 -ksp_gmres_cgs_refinement_type refine_never -log_view) ;;
  1) run_id=5885b66415f5 repetition=1  # laplace1d n=100000 gmres/jacobi P=64 K=500
     cmd=(ksptrace run --problem laplace1d --n 100000 --ksp gmres --pc jacobi --iterations 500 --restart 40 --out traces/5885b66415f5.h5 --overwrite --np 64 -ksp_gmres_cgs_refinement_type refine_never -log_view) ;;
  2) run_id=da3ff5fb0566 repetition=0  # laplace1d n=800000 gmres/jacobi P=128 K=500
     cmd=(ksptrace run --problem laplace1d --n 800000 --ksp gmres --pc jacobi --iterations 500 --restart 40 --out traces/da3ff5fb0566.h5 --overwrite --np 128 -ksp_gmres_cgs_refinement_type refine_never -log_view) ;;
  3) run_id=828c4f91c97e repetition=1  # laplace1d n=800000 gmres/jacobi P=128 K=500
     cmd=(ksptrace run --problem laplace1d --n 800000 --ksp gmres --pc jacobi --iterations 500 --restart 40 --out traces/828c4f91c97e.h5 --overwrite --np 128 -ksp_gmres_cgs_refinement_type refine_never -log_view) ;;
  4) run_id=275f149dde18 repetition=0  # laplace1d n=100000 pipebcgs/jacobi P=64 K=500
     cmd=(ksptrace run --problem laplace1d --n 100000 --ksp pipebcgs --pc jacobi --iterations 500 --restart 40 --out traces/275f149dde18.h5 --overwrite --np 64 -ksp_gmres_cgs_refinement_type refine_never -log_view) ;;
  5) run_id=cf122511b761 repetition=1  # laplace1d n=100000 pipebcgs/jacobi P=64 K=500
     cmd=(ksptrace run --problem laplace1d --n 100000 --ksp pipebcgs --pc jacobi --iterations 500 --restart 40 --out traces/cf122511b761.h5 --overwrite --np 64 -ksp_gmres_cgs_refinement_type refine_never -log_view) ;;
  6) run_id=f8aae1e268d6 repetition=0  # laplace1d n=800000 pipebcgs/jacobi P=128 K=500
     cmd=(ksptrace run --problem laplace1d --n 800000 --ksp pipebcgs --pc jacobi --iterations 500 --restart 40 --out traces/f8aae1e268d6.h5 --overwrite --np 128 -ksp_gmres_cgs_refinement_type refine_never -log_view) ;;
  7) run_id=f745f72a55ed repetition=1  # laplace1d n=800000 pipebcgs/jacobi P=128 K=500
     cmd=(ksptrace run --problem laplace1d --n 800000 --ksp pipebcgs --pc jacobi --iterations 500 --restart 40 --out traces/f745f72a55ed.h5 --overwrite --np 128 -ksp_gmres_cgs_refinement_type refine_never -log_view) ;;
  *) echo "ksptrace: no run for task $task" >&2; exit 2 ;;
esac

export KSPTRACE_RUN_ID="$run_id" KSPTRACE_REPETITION="$repetition"
mkdir -p traces logs state
log="logs/$run_id.log"
job="local:$(hostname):$$"
printf 'job=%s\nhost=%s\npid=%s\nlog=%s\n' "$job" "$(hostname)" "$$" "$log" > "state/$run_id.running.tmp" && mv -f "state/$run_id.running.tmp" "state/$run_id.running"
echo "ksptrace: task $task run $run_id -> $log"
"${cmd[@]}" > "$log" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then
  rm -f "state/$run_id.failed"
else
  printf 'job=%s\nrc=%s\nlog=%s\n' "$job" "$rc" "$log" > "state/$run_id.failed.tmp" && mv -f "state/$run_id.failed.tmp" "state/$run_id.failed"
  echo "ksptrace: run $run_id failed with exit code $rc; see $log" >&2
fi
rm -f "state/$run_id.running"
exit "$rc"
