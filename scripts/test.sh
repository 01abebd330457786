#!/bin/bash
# The whole test suite, from a fresh clone on a fresh Debian machine (run as root):
#   installs what it needs (Python venv + deps, the lab's Debian packages), brings the 4-node lab up,
#   then runs ruff, mypy, the unit tests and the integration tests on the lab.
# Integration tests never skip: if the lab cannot start, this fails.
#   bash scripts/test.sh [--slurm RELEASE] [pytest args]: the integration suite also runs, unchanged, on the lab
#   of Slurm RELEASE (default 24.11; 26.05 too: --slurm "24.11 26.05"), in a Debian root (slurmtools/lab/chroot.py).
set -euo pipefail
cd "$(dirname "$0")/.."
extra="24.11"
if [ "${1:-}" = --slurm ]; then extra="$2"; shift 2; fi
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "slurmtools needs Python >= 3.11 (found $("$PY" --version 2>&1))" >&2; exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/pip install -q --disable-pip-version-check -e '.[dev]' 2> >(grep -v '^WARNING: Location' >&2)
export PATH="$PWD/.venv/bin:$PATH"

echo "== lab up"
for release in 24.11 26.05; do slurmtools lab down --slurm "$release" >/dev/null 2>&1 || true; done
slurmtools lab up
echo "== ruff"
ruff check slurmtools tests bench
echo "== mypy"
mypy slurmtools
echo "== pytest"
started=$(date +%s)
rc=0
pytest -p no:cacheprovider -ra "$@" tests || rc=$?
echo "== docs/reliability.md (from the fault matrix's run)"
python bench/reliability_doc.py --since "$started" || true
for release in $extra; do
    echo "== the integration suite on Slurm $release"
    slurmtools lab down
    if slurmtools lab up --slurm "$release"; then
        (eval "$(slurmtools lab env --slurm "$release")"; pytest -p no:cacheprovider -ra "$@" tests/integration) || rc=$?
    else
        rc=1
    fi
    slurmtools lab down --slurm "$release"
    slurmtools lab up          # the host's lab again
done
echo "== docs/compatibility.md (from the runs on each release)"
python bench/compat_doc.py --since "$started" || true
exit $rc
