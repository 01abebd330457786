"""Stalled jobs (docs/stalls.md): a running job that stopped making progress while it still holds its GPUs.

From outside the job, with no change to it: `progress` (its output and error files, checkpoint lines, and the
job's own normal quiet time learned from its history), `gpu` (per-GPU utilisation, power and SM activity from
DCGM in Prometheus or from our light per-node `sampler`'s textfile metrics: spinning, idle, working), `judge`
(stalled or not, thresholds from the configuration with per-partition and per-job overrides), `blame` (the one
node that differs is the suspect), `evidence` (what was seen on each node before anything is done: process tree
with states and wait channels, py-spy dumps, kernel findings), `act` (through the same rails: a finding, the
emergency-checkpoint signal, a requeue the controller finishes, counted against the chain's retry budget as a
`stall`), `notify` (apprise, in the background) and `scan` (one pass over the running jobs)."""
