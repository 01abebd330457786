"""Check that every job_desc field our job_submit.lua reads or sets, and every option our cli_filter.lua reads or sets,
exists in a Slurm release's own source: job_desc fields in src/plugins/job_submit/lua/job_submit_lua.c (its get and
set functions), options in src/common/slurm_opt.c (the names cli_filter's options table is built from). Prints a
markdown table for docs/plugins.md; exits 1 if a field is missing in a release.

    python bench/plugin_fields.py --src /path/to/slurm.git [--tag slurm-22-05-8-1 --tag slurm-24-11-5-1 ...]

(`git clone https://github.com/SchedMD/slurm` gives the source; the tags name the releases.)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "slurmtools" / "plugins" / "templates"
TAGS = ["slurm-22-05-8-1", "slurm-24-11-5-1", "slurm-26-05-0-1"]


def used() -> tuple[list[str], list[str]]:
    """(job_desc fields, cli_filter options) our templates use."""
    fields, options = set(), set()
    for t in TEMPLATES.glob("*.j2"):
        text = t.read_text()
        fields |= set(re.findall(r"job_desc\.([a-z_]+)", text))
        options |= set(re.findall(r'options\["([a-z_-]+)"\]', text))
    return sorted(fields), sorted(options)


def show(src: Path, tag: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(src), "show", f"{tag}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", type=Path, required=True, help="a git clone of SchedMD/slurm")
    ap.add_argument("--tag", action="append", help=f"release tags (default: {' '.join(TAGS)})")
    a = ap.parse_args()
    tags = a.tag or TAGS
    fields, options = used()
    rows: dict[str, list[str]] = {}
    missing = 0
    for tag in tags:
        lua = show(a.src, tag, "src/plugins/job_submit/lua/job_submit_lua.c")
        opt = show(a.src, tag, "src/common/slurm_opt.c")
        for f in fields:
            n = len(re.findall(rf'xstrcmp\(name, "{f}"\)', lua))   # read (get) and written (set)
            ok = n >= 2
            missing += not ok
            rows.setdefault(f"`job_desc.{f}` (job_submit.lua)", []).append("read + set" if ok else f"❌ ({n})")
        for o in options:
            ok = f'.name = "{o}"' in opt
            missing += not ok
            rows.setdefault(f'`options["{o}"]` (cli_filter.lua)', []).append("✅" if ok else "❌")
    print("| field | " + " | ".join(t.removeprefix("slurm-").rsplit("-", 1)[0].replace("-", ".") for t in tags) + " |")
    print("| --- |" + " --- |" * len(tags))
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
