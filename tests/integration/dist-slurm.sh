#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Slurm for real: a one-node cluster started by the test, as root, in its
# scratch folder (Debian's munge and slurm-wlm: munged with its own key and
# socket, slurmctld and slurmd with a slurm.conf written here, on ports of
# this run), removed at exit, on failure too.
#   srun --mpi=pmix -n 2 gst-train ...: trains, each rank says it joined
#   (rank R of 2), and the checkpoint is bitwise mpirun's.
#   The sbatch script of docs/distributed.md, submitted as it is written
#   there (sbatch --wait): the same checkpoint.
#   srun without --mpi=pmix: every task fails with the error that names
#   the missing rank information, nothing trained.
# Usage: dist-slurm.sh HAVE-MPI DATASET-TOOL GST-TRAIN SOURCE-DIR
set -eu
. "$(dirname "$0")/dist-common.sh"
dist_setup dist-slurm "$1" "$2" 48
# absolute: the batch job runs in the folder it was submitted from
GST_TRAIN="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"
export GST_TRAIN
docs="$4/docs/distributed.md"
for program in munged slurmctld slurmd srun sbatch; do
  command -v "$program" >/dev/null || fail "$program is not installed (scripts/install-deps.sh installs munge and slurm-wlm)"
done
[ "$(id -u)" = 0 ] || fail "the test's cluster runs as root"

cluster=$work/cluster
mkdir -p "$cluster/state" "$cluster/spool" "$cluster/munge"
chmod 700 "$cluster/munge"
pids=
stop_cluster() {
  if [ -f "$cluster/slurm.conf" ]; then
    SLURM_CONF=$cluster/slurm.conf scancel --partition=gt >/dev/null 2>&1 || true
  fi
  munged_pid=$(cat "$cluster/munge/munged.pid" 2>/dev/null || true)
  # shellcheck disable=SC2086
  for pid in $pids $munged_pid; do
    kill "$pid" 2>/dev/null || true
  done
  sleep 0.5
  # shellcheck disable=SC2086
  for pid in $pids $munged_pid; do
    kill -9 "$pid" 2>/dev/null || true
  done
}
trap 'stop_cluster; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

# munge: a key and a socket of this run
dd if=/dev/urandom of="$cluster/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$cluster/munge/munge.key"
munged --force --socket="$cluster/munge/munge.socket" \
  --key-file="$cluster/munge/munge.key" --pid-file="$cluster/munge/munged.pid" \
  --log-file="$cluster/munge/munged.log" --seed-file="$cluster/munge/munged.seed" \
  || fail "munged did not start: $(tail -3 "$cluster/munge/munged.log" 2>/dev/null)"

port=$((20000 + $$ % 20000))
cat >"$cluster/slurm.conf" <<EOF
ClusterName=gttest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster/munge/munge.socket
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/slurmctld.log
SlurmdLogFile=$cluster/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=gtnode NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=gt Nodes=gtnode Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$cluster/slurm.conf"
slurmctld -D -i >"$cluster/slurmctld.out" 2>&1 &
pids="$pids $!"
slurmd -D -N gtnode >"$cluster/slurmd.out" 2>&1 &
pids="$pids $!"
deadline=$(($(date +%s) + 30))
until sinfo -h -o %T 2>/dev/null | grep -qx idle; do
  [ "$(date +%s)" -lt "$deadline" ] || {
    tail -5 "$cluster/slurmctld.log" "$cluster/slurmd.log" 2>/dev/null
    fail "the test's Slurm cluster did not come up"; }
  sleep 0.2
done
echo "a one-node Slurm cluster is up (slurmctld on port $port)"

size=16 batch=4 steps=6
line="datasetsrc location=$work/fm/train seed=3 num-epochs=-1 ! imagedec
  ! augment width=$size height=$size ! batcher batch-size=$batch
  ! cudatrainsink device=cpu model=resnet20 num-threads=1
    max-steps=$steps total-steps=$steps stats-interval=25 collective-timeout=600"
# shellcheck disable=SC2086
mpi 2 "$GST_TRAIN" $line checkpoint-location="$work/mpirun.safetensors" \
  >"$work/mpirun.log" 2>&1 || { cat "$work/mpirun.log"; fail "mpirun -np 2"; }

# srun --mpi=pmix
# shellcheck disable=SC2086
(GT_TEST_MPI_BOUND_S=120
  bounded srun --mpi=pmix -n 2 "$GST_TRAIN" $line checkpoint-location="$work/srun.safetensors") \
  >"$work/srun.log" 2>&1 || { cat "$work/srun.log"; fail "srun --mpi=pmix -n 2"; }
for r in 0 1; do
  grep -q "^rank $r: info from cudatrainsink0: Joined a data-parallel job as rank $r of 2" \
    "$work/srun.log" || { cat "$work/srun.log"; fail "srun: rank $r did not say it joined a job of 2"; }
done
ckpt same "$work/srun.safetensors" "$work/mpirun.safetensors"
echo "srun --mpi=pmix -n 2: bitwise the mpirun run"

# the sbatch script of docs/distributed.md, as written there
sed -n '/^<!-- dist-slurm.sh submits this script -->$/,/^```$/p' "$docs" \
  | sed '1,2d;$d' >"$work/train.sbatch"
grep -q "^#SBATCH" "$work/train.sbatch" || fail "no sbatch script in $docs"
(cd "$work" && export GST_TRAIN DATA="$work/fm/train" SIZE=$size BATCH=$batch \
  STEPS=$steps CHECKPOINT="$work/sbatch.safetensors" && GT_TEST_MPI_BOUND_S=120 \
  && bounded sbatch --wait --output="$work/sbatch.out" train.sbatch) \
  >"$work/sbatch.log" 2>&1 || { cat "$work/sbatch.log" "$work/sbatch.out"; fail "sbatch of the documented script"; }
grep -q "Joined a data-parallel job as rank 1 of 2" "$work/sbatch.out" \
  || { cat "$work/sbatch.out"; fail "sbatch: rank 1 did not say it joined a job of 2"; }
ckpt same "$work/sbatch.safetensors" "$work/mpirun.safetensors"
echo "sbatch of docs/distributed.md's script: bitwise the mpirun run"

# srun without --mpi=pmix (MpiDefault=none): a clear error on each task
status=0
# shellcheck disable=SC2086
(GT_TEST_MPI_BOUND_S=120
  bounded srun -n 2 "$GST_TRAIN" $line checkpoint-location="$work/nopmi.safetensors") \
  >"$work/nopmi.log" 2>&1 || status=$?
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] || { cat "$work/nopmi.log"; fail "srun without --mpi=pmix: exit status $status"; }
for r in 0 1; do
  grep -q "^rank $r: error from cudatrainsink0: srun started this process as task $r of 2 (SLURM_PROCID, SLURM_NTASKS) without the rank information MPI needs: no PMIX_RANK or PMI_RANK" \
    "$work/nopmi.log" || { cat "$work/nopmi.log"; fail "srun without --mpi=pmix: task $r's error"; }
done
[ ! -e "$work/nopmi.safetensors" ] || fail "srun without --mpi=pmix trained"
echo "srun without --mpi=pmix: each task names the missing rank information"

echo "ok: srun --mpi=pmix and the documented sbatch script train bitwise as mpirun; srun without it is a clear error"
