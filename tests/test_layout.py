"""The package's layout, read from its import graph: no import cycle, no private name imported across modules,
one folder per stage with a docstring that says what it does, and no oversized module."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "slurmtools"
STAGES = ("hooks", "checks", "diagnosis", "ledger", "controller", "jobs", "plugins", "slurm", "lab", "cli",
          "reports", "iostat", "stalls")
#: Top-level modules that are shared by every stage (everything else lives in a stage's folder).
SHARED = {"__init__.py", "__main__.py", "config.py", "settings.py", "fsutil.py", "timeutil.py", "_plain.py",
          "textsafe.py", "bounds.py"}
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
