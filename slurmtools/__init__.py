"""slurmtools: keep GPU training clusters on Slurm productive.

The loop: prolog health gates, epilog diagnosis, a failure ledger, a requeue
controller and reports. Heavy modules are imported lazily so that hooks stay fast.
"""

__version__ = "0.1.0"
