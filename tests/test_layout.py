"""The package's layout, read from its import graph: no import cycle, no private name imported across modules,
one folder per stage with a docstring that says what it does, and no oversized module."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "slurmtools"
STAGES = ("hooks", "checks", "diagnosis", "ledger", "drain", "controller", "jobs", "plugins", "slurm", "lab", "cli",
          "reports", "iostat", "stalls", "detect")
#: Top-level modules that are shared by every stage (everything else lives in a stage's folder).
SHARED = {"__init__.py", "__main__.py", "config.py", "settings.py", "fsutil.py", "timeutil.py", "_plain.py",
          "textsafe.py", "bounds.py", "jobstate.py"}
MAX_LINES = 460


def modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        if "migrations" in p.parts:
            continue
        rel = p.relative_to(PKG.parent).with_suffix("")
        out[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = p
    return out


def graph() -> tuple[dict[str, set[str]], list[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {}
    private: list[str] = []
    for name, path in mods.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("slurmtools"):
                    continue
                for alias in node.names:
                    if f"{target}.{alias.name}" in mods:
                        deps.add(f"{target}.{alias.name}")
                    elif target in mods:
                        deps.add(target)
                        if alias.name.startswith("_") and not alias.name.startswith("__") and target != name:
                            private.append(f"{name} imports {target}.{alias.name}")
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in mods)
        edges[name] = deps - {name}
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    edges, _ = graph()
    assert edges.get("slurmtools.cli"), "the graph must see the CLI's imports"
    assert cycles(edges) == []


def test_no_private_name_imported_across_modules() -> None:
    _, private = graph()
    assert private == []


def test_one_folder_per_stage_each_saying_what_it_does() -> None:
    for stage in STAGES:
        init = PKG / stage / "__init__.py"
        assert init.is_file(), stage
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.split()) >= 15, f"{stage}/__init__.py needs a docstring saying what the stage does"
    loose = sorted(p.name for p in PKG.glob("*.py") if p.name not in SHARED)
    assert loose == []


#: Parameters annotated exactly `Any` (issue 31): few may, each saying why on its line (`# Any: ...`).
MAX_ANY_PARAMETERS = 10


def any_parameters(source: str) -> list[tuple[int, str, bool]]:
    """(line, parameter, whether its line gives the reason) for every parameter of SOURCE annotated `Any`:
    positional, keyword-only, *args and **kwargs alike."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]:
            ann = arg.annotation
            if (isinstance(ann, ast.Name) and ann.id == "Any") or (isinstance(ann, ast.Attribute)
                                                                  and ann.attr == "Any"):
                out.append((arg.lineno, arg.arg, "# Any:" in lines[arg.lineno - 1]))
    return out


def test_the_any_finder_finds_every_kind_of_parameter() -> None:
    src = ("def f(a: Any, /, b: int, *c: Any, d: typing.Any, **e: Any) -> Any:  # Any: the test\n"
           "    def g(x: object) -> None: ...\n")
    assert any_parameters(src) == [(1, "a", True), (1, "d", True), (1, "c", True), (1, "e", True)]
    assert any_parameters("def f(a: Any) -> None: ...\n") == [(1, "a", False)]


def test_few_parameters_are_any() -> None:
    found = {f"{p.relative_to(PKG.parent)}:{line} {name}": why for p in PKG.rglob("*.py")
             for line, name, why in any_parameters(p.read_text())}
    assert len(found) <= MAX_ANY_PARAMETERS, sorted(found)


def test_no_oversized_module() -> None:
    big = {name: n for name, p in modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert big == {}


def test_hooks_import_no_cli_and_no_database_at_module_level() -> None:
    """What Slurm runs before every job must not pull in click or SQLAlchemy by importing a hook module
    (the healthy prolog's whole import set is checked in test_checks.py)."""
    for path in (PKG / "hooks").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for n in names:
                assert not n.startswith(("click", "sqlalchemy", "slurmtools.cli")), f"{path.name} imports {n}"


#: The import-direction rule of docs/architecture.md ("Imports point down the loop"): every folder under
#: slurmtools/ and every shared module, with what it may import. A new folder, or a new arrow, fails until listed.
#: Shared by every stage: they import only each other (and `diagnosis.rules`, for config's validation of rules).
SHARED_IMPORTS = {"config": {"fsutil", "settings", "diagnosis.rules"}, "settings": {"_plain"}, "fsutil": set(),
                  "timeutil": set(), "_plain": set(),
                  "textsafe": set(), "bounds": set(), "jobstate": {"fsutil"}, "__main__": {"cli"}, "": set()}
BASE = {"config", "settings", "fsutil", "timeutil", "_plain", "textsafe", "bounds", "jobstate"}

#: folder -> what it may import besides itself and the shared modules: a folder ("ledger") or one module of it
#: ("controller.queue"). Down the loop: hooks -> checks, diagnosis, the spool, the drain path; the controller ->
#: ledger, jobs.marker, slurm; cli -> everything, nothing -> cli.
ALLOWED: dict[str, set[str]] = {
    "slurm": set(),
    "diagnosis": {"ledger.events", "ledger.fields"},          # the findings' vocabulary: the events' enums
    "iostat": set(),
    "lab": set(),
    "ledger": {"slurm"},
    "checks": {"ledger.spool"},                                # perfrecord spools its events
    "drain": {"ledger.spool", "slurm", "checks.runner"},       # node_boot_id, lazily, on an applied drain
    "jobs": {"diagnosis", "ledger", "slurm", "plugins", "reports.advice", "reports.model",   # sbatch's advice
             "controller.state"},                               # status reads decisions through their type
    "plugins": {"jobs.marker"},
    "hooks": {"checks", "diagnosis", "ledger", "drain", "iostat", "slurm", "jobs.marker",
              "controller.queue"},                             # the slurmctld epilog only enqueues
    "controller": {"ledger", "slurm", "drain", "diagnosis", "jobs", "plugins", "checks"},
    "detect": {"diagnosis", "ledger", "drain", "slurm"},      # the Slurm client it hands the drain path
    "stalls": {"diagnosis", "ledger", "drain", "slurm", "iostat", "jobs", "detect.prom", "detect.scan", "detect.links",
               "hooks.textfile", "controller.base", "controller.recovery", "controller.state",
               "controller.evacuate"},                         # a stall decision, finished as an evacuation
    "reports": {"checks", "iostat", "ledger", "slurm", "drain"},
    "cli": {"*"},
}
#: Not code: no imports to check.
NOT_CODE = {"data", "__pycache__"}


def _part(module: str) -> tuple[str, str]:
    """slurmtools.a.b.c -> ("a", "a.b"); slurmtools.config -> ("config", "config")."""
    parts = module.split(".")[1:]
    return (parts[0] if parts else ""), ".".join(parts[:2])


def test_every_folder_is_listed() -> None:
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and p.name not in NOT_CODE}
    assert folders - set(ALLOWED) == set(), "a new folder: list what it may import in ALLOWED"
    assert set(ALLOWED) - folders == set(), "a folder that is gone: remove it from ALLOWED"


def _wrong(edges: dict[str, set[str]]) -> list[str]:
    wrong = []
    for src, deps in edges.items():
        top, _ = _part(src)
        allowed = SHARED_IMPORTS.get(top) if top in SHARED_IMPORTS else ALLOWED.get(top, set()) | BASE
        if allowed is None or "*" in allowed:
            continue
        for dep in deps:
            dtop, dmod = _part(dep)
            if dtop == top or dtop in allowed or dmod in allowed or dep.removeprefix("slurmtools.") in allowed:
                continue
            wrong.append(f"{src} imports {dep}")
    return sorted(wrong)


def test_imports_point_down_the_loop() -> None:
    edges, _ = graph()
    assert any(d.startswith("slurmtools.drain") for d in edges["slurmtools.hooks.prolog"]), "lazy imports seen"
    assert _wrong(edges) == []


def test_an_arrow_up_the_loop_is_refused() -> None:
    assert _wrong({"slurmtools.hooks.prolog": {"slurmtools.controller.engine"},
                   "slurmtools.controller.engine": {"slurmtools.cli.common"},
                   "slurmtools.drain": {"slurmtools.controller.base"},
                   "slurmtools.config": {"slurmtools.ledger.api"}}) == [
        "slurmtools.config imports slurmtools.ledger.api",
        "slurmtools.controller.engine imports slurmtools.cli.common",
        "slurmtools.drain imports slurmtools.controller.base",
        "slurmtools.hooks.prolog imports slurmtools.controller.engine"]
    assert _wrong({"slurmtools.hooks.runner": {"slurmtools.controller.queue", "slurmtools.drain"}}) == []
