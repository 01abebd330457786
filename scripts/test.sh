#!/bin/bash
# The whole test suite, from a fresh clone on a fresh Debian machine (run as root):
#   installs what it needs (Python venv + deps, the lab's Debian packages), brings the 4-node lab up,
#   then runs ruff, mypy, the unit tests and the integration tests on the lab.
# Integration tests never skip: if the lab cannot start, this fails.
#   bash scripts/test.sh [--slurm RELEASE] [pytest args]: the integration suite also runs, unchanged, on the lab
#   of Slurm RELEASE (default 24.11; 26.05 too: --slurm "24.11 26.05"), in a Debian root (slurmtools/lab/chroot.py);
#   25.11 and 26.05 are built from source in one, 25.11 with pyslurm (slurmtools/lab/source.py; about 15 min the
#   first time).
#   Unless RELEASE names 25.11, every run also builds 25.11 (cached by version + tarball hash) and runs the backend
#   contract suite there, both backends (CLI and pyslurm); the whole suite on 25.11 and 26.05 is the scheduled run
#   (README: what runs where).
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

# Each stage's result and time, printed again at the end (one line each), so a failure shows in the last lines.
summary=()
stage_t0=0
begin() { echo "== $1"; stage_t0=$(date +%s); }
record() {  # NAME RC
    local secs=$(( $(date +%s) - stage_t0 ))
    summary+=("$(printf '%-46s %-6s %4dm%02ds' "$1" "$([ "$2" = 0 ] && echo ok || echo FAILED)" $((secs / 60)) $((secs % 60)))")
    [ "$2" = 0 ] || rc=1
}
counts=$(mktemp)
tally() {  # pytest's closing line ("648 passed, 2 skipped in 900.1s") into the run's totals
    tail -n 1 "$1" | grep -Eo '[0-9]+ (passed|failed|skipped|errors?)' >> "$counts" || true
}
finish() {
    echo
    echo "== summary (scripts/test.sh, $(( ($(date +%s) - all_t0) / 60 )) min in all)"
    printf '%s\n' "${summary[@]}"
    local n
    n() { awk -v w="$1" '$2 ~ "^"w {s += $1} END {print s + 0}' "$counts"; }
    echo "tests: $(n passed) passed, $(( $(n failed) + $(n error) )) failed, $(n skipped) skipped"
    exit $rc
}
all_t0=$(date +%s)
rc=0
begin "lab up"
for release in 24.11 25.11 26.05; do slurmtools lab down --slurm "$release" >/dev/null 2>&1 || true; done
r=0; slurmtools lab up || r=$?; record "lab up (Slurm 22.05, the host's)" $r
[ $r = 0 ] || finish
begin "ruff"
r=0; ruff check slurmtools tests bench || r=$?; record "ruff" $r
begin "mypy"
r=0; mypy slurmtools || r=$?; record "mypy" $r
begin "pytest"
started=$(date +%s)
out=$(mktemp)
r=0; pytest -p no:cacheprovider -ra "$@" tests | tee "$out" || r=$?; tally "$out"; record "unit + integration tests on Slurm 22.05" $r
echo "== docs/reliability.md (from the fault matrix's run)"
python bench/reliability_doc.py --since "$started" || true
on_release() {  # RELEASE NAME TESTS [pytest args]: TESTS on RELEASE's lab, recorded as NAME; then the host's lab again
    local release=$1 name=$2 tests=$3 r=0
    shift 3
    slurmtools lab down
    if slurmtools lab up --slurm "$release"; then
        (eval "$(slurmtools lab env --slurm "$release")"; pytest -p no:cacheprovider -ra "$@" "$tests") \
            | tee "$out" || r=$?
        tally "$out"
    else
        r=1
    fi
    slurmtools lab down --slurm "$release"
    record "$name" $r
    slurmtools lab up || record "the host's lab up again after Slurm $release" 1
}
for release in $extra; do
    begin "the integration suite on Slurm $release"
    on_release "$release" "integration tests on Slurm $release" tests/integration "$@"
done
case " $extra " in
    *" 25.11 "*) ;;
    *)
        begin "the backend contract on Slurm 25.11 (from source, pyslurm)"
        if python -c 'import sys; from slurmtools.lab import source; sys.exit(source.find_tarball("25.11") is None)'
        then
            on_release 25.11 "backend contract on Slurm 25.11 (CLI + pyslurm)" \
                tests/integration/test_backend_conformance.py "$@"
        else
            # no vendored tarball, no SLURMTOOLS_SLURM_SOURCE, and SchedMD is no package registry: said, not run
            echo "Slurm 25.11's source is not on this machine (../shared/vendor, SLURMTOOLS_SLURM_SOURCE): not run"
            summary+=("$(printf '%-46s %s' "backend contract on Slurm 25.11" "NOT RUN: no Slurm 25.11 source here")")
        fi
        ;;
esac
echo "== docs/compatibility.md (from the runs on each release)"
python bench/compat_doc.py --since "$started" || true
finish
