"""The lab: a real multi-node Slurm cluster on one machine, for tests, the demo and trying slurmtools.

Debian's munge, slurmctld, slurmdbd (with MariaDB) and four ``slurmd -N nX`` on their own ports, fake
GPUs as gres on character devices, and PostgreSQL for the ledger; every listener on loopback. It reads
and writes only its state directory (default /var/tmp/slurmtools-lab) and tracks every daemon by its PID
file. `cluster` (the Lab), `procs` (PID files, ports), `faults` (what `lab inject` does).
"""

from slurmtools.lab.cluster import Lab
from slurmtools.lab.procs import LabError, read_pid

__all__ = ["Lab", "LabError", "read_pid"]
