#!/bin/bash
# Re-record the Slurm output fixtures from the lab into <release>/ (`slurmtools lab up [--slurm RELEASE]` first):
#   tests/data/slurm/record.sh            # the host's lab (22.05 on Debian 12)
#   tests/data/slurm/record.sh 24.11      # the lab of Slurm 24.11 (in its Debian root)
# Produces drained/draining/idle/mixed nodes, failed, signalled, requeued and running jobs.
set -eu
cd "$(dirname "$0")"
if [ -n "${1:-}" ]; then eval "$(slurmtools lab env --slurm "$1")"; else eval "$(slurmtools lab env)"; fi
release=$(sinfo --version | awk '{print $2}' | cut -d. -f1-2)
mkdir -p "$release" && cd "$release"
scontrol update nodename=n3 state=resume reason=x 2>/dev/null || true
scontrol update nodename=n4 state=resume 2>/dev/null || true
ok=$(sbatch --parsable -o /dev/null -D /tmp -N1 -w n1 --gres=gpu:1 --wrap 'true')
e3=$(sbatch --parsable -o /dev/null -D /tmp -N1 -w n1 --wrap 'exit 3')
sig=$(sbatch --parsable -o /dev/null -D /tmp -N1 -w n1 --wrap 'kill -9 $$')
run=$(sbatch --parsable -o /dev/null -D /tmp -N2 -w n[1-2] --gres=gpu:2 --exclude=n4 --comment='slurmtools:retry=3,on=node' --wrap 'sleep 300')
rq=$(sbatch --parsable -o /dev/null -D /tmp -N1 -w n2 --requeue --wrap 'sleep 300')
wait_running() { for _ in $(seq 150); do [ "$(squeue -h -j "$1" -o %T)" = RUNNING ] && return; sleep 0.2; done; echo "job $1 never ran" >&2; exit 1; }
wait_running "$run"; wait_running "$rq"
scontrol requeue "$rq"
busy=$(sbatch --parsable -o /dev/null -D /tmp -N1 -w n4 --wrap 'sleep 300')
sleep 2
scontrol update nodename=n3 state=drain reason='slurmtools: hardware: xid 79 gpu 2 fell off the bus [job 7]'
scontrol update nodename=n4 state=drain reason='admin: cable reseat'
wait_running "$rq"  # the second attempt (after cred_expire+1 s)
sleep 1
sinfo --json > sinfo.json
# 23.02 and later: what CliSlurm.nodes reads (22.05's scontrol has no --json)
if scontrol show node --json > scontrol-show-node.json 2>/dev/null; then :; else rm -f scontrol-show-node.json; fi
squeue --json --states=all > squeue.json   # what CliSlurm.jobs runs
scontrol show job -o > scontrol-show-job.txt
sacct -P -X --duplicates -S now-1hour -o JobIDRaw,JobID,JobName,User,State,ExitCode,DerivedExitCode,NodeList,Submit,Start,End,ElapsedRaw,Partition,AllocNodes,Reason,WorkDir,Comment > sacct.txt
sacctmgr -P -n show event format=NodeName,TimeStart,TimeEnd,State,Reason,User Start=now-1day > sacctmgr-events.txt
scancel "$run" "$rq" "$busy"
scontrol update nodename=n3 state=resume
scontrol update nodename=n4 state=resume
printf '{"ok": %s, "exit3": %s, "signal": %s, "running": %s, "requeued": %s, "busy": %s}\n' "$ok" "$e3" "$sig" "$run" "$rq" "$busy" > jobs.json
cat jobs.json
