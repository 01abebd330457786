#!/bin/bash
# The demo, from a fresh clone on a fresh Debian machine (run as root): a local 4-node Slurm
# cluster comes up, a job runs on it, a GPU "falls off the bus" on one node, and slurmtools shows it.
#   bash scripts/demo.sh [--slurm 24.11]: the same on Slurm 24.11 (or 26.05), in a Debian root the lab makes once
set -euo pipefail
cd "$(dirname "$0")/.."
release=""
if [ "${1:-}" = --slurm ]; then release="$2"; fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[postgres]' 2> >(grep -v '^WARNING: Location' >&2)
export PATH="$PWD/.venv/bin:$PATH"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "bring up the lab: munge, MariaDB + slurmdbd, slurmctld, 4 slurmd with 4 fake GPUs each, PostgreSQL"
if [ -n "$release" ]; then
    slurmtools lab down >/dev/null 2>&1 || true     # the host's lab holds the same ports
    slurmtools lab up --slurm "$release"
    eval "$(slurmtools lab env --slurm "$release")"
else
    slurmtools lab up
    eval "$(slurmtools lab env)"
fi
sinfo --version

say "the cluster, through slurmtools"
slurmtools nodes

say "start the requeue controller (on a real cluster: a service on the slurmctld host)"
slurmtools controller run --no-recovery --interval 0.5 > "$SLURMTOOLS_LAB_DIR/log/controller-demo.log" 2>&1 &
ctl=$!
trap 'kill $ctl 2>/dev/null || true' EXIT
echo "controller pid $ctl; EpilogSlurmctld queues every ended job for it in $SLURMTOOLS_LAB_DIR/controller"

say "a researcher submits a 2-node job with 2 GPUs per node through the wrapper: sbatch -> slurmtools sbatch"
work=$(mktemp -d /tmp/slurmtools-demo.XXXXXX); chmod 755 "$work"
echo "(the wrapper adds the active exclusions, --requeue, --open-mode=append and the retry marker the controller reads)"
job=$(slurmtools sbatch --parsable --max-retries 2 -D "$work" -o "$work/job.out" -N2 --gres=gpu:2 \
      --wrap 'srun --kill-on-bad-exit=1 bash -c "echo attempt \${SLURM_RESTART_COUNT:-0} on \$SLURMD_NODENAME GPUs \$CUDA_VISIBLE_DEVICES; [ \${SLURM_RESTART_COUNT:-0} = 0 ] && sleep 600; sleep 5"')
echo "submitted job $job"
for _ in $(seq 100); do [ "$(squeue -h -j "$job" -o %T)" = RUNNING ] && break; sleep 0.2; done
sleep 1  # let srun start the tasks on both nodes
squeue -j "$job" -o '%.8i %.10T %.12N'
node=$(scontrol show hostnames "$(squeue -h -j "$job" -o %N)" | tail -n 1)

say "inject a fault: a GPU on $node falls off the bus (XID 79 in $node's kernel log, the job's processes die)"
slurmtools lab inject "$node" xid79

say "what happened: the job died, the epilog diagnosed $node's kernel log and took $node out of service"
for _ in $(seq 50); do squeue -h -j "$job" -o %T | grep -q RUNNING || break; sleep 0.2; done
for _ in $(seq 50); do sinfo -h -R -n "$node" -o %E | grep -q slurmtools && break; sleep 0.2; done
sacct -X -j "$job" -o JobID,State,ExitCode,NodeList
echo; sinfo -R -o '%10N %60E %U'
say "the failure ledger (PostgreSQL): what the epilog recorded for job $job"
for _ in $(seq 50); do slurmtools ledger events --job "$job" 2>/dev/null | grep -q xid && break; sleep 0.2; done
slurmtools ledger events --job "$job"
say "the cluster, through slurmtools"
slurmtools nodes
say "the exclusion the drain opened"
slurmtools ledger flush --quiet || true
slurmtools exclude list
say "the controller requeued job $job (same id) with $node excluded; it runs on healthy nodes"
for _ in $(seq 150); do [ "$(squeue -h -j "$job" -o %T)" = RUNNING ] && break; sleep 0.2; done
scontrol show job "$job" | grep -E "JobState|Restarts|ExcNodeList| NodeList"
for _ in $(seq 100); do [ "$(squeue -h -j "$job" -o %T 2>/dev/null)" = COMPLETED ] && break; sleep 0.3; done
echo; echo "the job's output, both attempts (--open-mode=append):"; cat "$work/job.out"
say "the controller's decisions, with how long the job was down"
slurmtools controller status --limit 3
say "what the researcher sees: slurmtools status / why $job"
slurmtools status "$job"
echo; slurmtools why "$job"
say "the node is repaired: end the exclusion (resumes only a node slurmtools drained)"
slurmtools exclude remove "$node" --reason "demo: repaired"
say "the report: what the loop did, from the ledger (job times from Slurm's accounting first)"
slurmtools ledger import-sacct --since 1h > /dev/null
slurmtools report --since 1h
slurmtools report --since 1h --format html -o "$SLURMTOOLS_LAB_DIR/report.html"
echo "HTML report (one file, charts inline): $SLURMTOOLS_LAB_DIR/report.html"
echo "Prometheus (the lab's, scraping slurmtools exporter): curl -s 'http://127.0.0.1:19090/api/v1/query?query=slurmtools_node_excluded'"
cat <<'EOT'

Also try: `slurmtools exclude add n3 --soft --reason test`, then a plain
`sbatch --wrap true` gets n3 in its excluded nodes (slurmtools' job_submit.lua) and `srun -w n3 true`
warns (cli_filter.lua); `slurmtools sbatch` is the researcher's wrapper (docs/sbatch.md).
Try the prolog gate: `slurmtools lab inject n3 row-remap-failure`, then
jobs that land on n3 are requeued elsewhere (`slurmtools lab inject n3 healthy` restores it).
EOT
echo "Use the lab yourself:   eval \"\$(slurmtools lab env${release:+ --slurm $release})\"; sinfo; slurmtools nodes"
echo "Stop it:                slurmtools lab down${release:+ --slurm $release}"
