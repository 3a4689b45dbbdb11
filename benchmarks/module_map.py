"""The package's shape: its largest modules and any import cycle among its modules.

    python benchmarks/module_map.py [--root newton_usd] [--top 15] [--max-lines 700]

Reads the source only (nothing is imported). Every ``import`` and ``from ... import`` of a package module
counts, the ones inside functions too (a lazy import is a dependency all the same: it only runs later).
Prints the ``--top`` largest modules by line count, then each import cycle (a strongly connected group of
modules, with one circle through it), then the modules over ``--max-lines`` that are not on
:data:`LONG_MODULES`. Exit status 1 when there is a cycle or such a module (tests/test_architecture.py runs
it), else 0.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MAX_LINES = 700
"""A module longer than this holds several jobs, unless it is on :data:`LONG_MODULES`."""

LONG_MODULES: dict = {}
"""Modules allowed over :data:`MAX_LINES`, path -> the one job that needs the length (a module with several jobs is
cut by job instead). Empty since issue 34 cut ``sim.py`` and ``solvers/mujoco/solver_mujoco.py``."""

ALLOWED_EDGES = {
    # ModelBuilder.add_usd / add_mjcf: thin entry points that import their importer when called (see
    # docs/architecture.md, "Layering"): core never imports usd/ or mjcf/ at load time.
    ("newton_usd.core.builder", "newton_usd.usd.importer"),
    ("newton_usd.core.builder", "newton_usd.mjcf.importer"),
}
"""Imports (importer, imported) left out of the cycle search, each a documented decision."""


def modules(root: Path) -> dict:
    """Dotted module name -> its file, for every ``.py`` file under ``root`` (a package directory)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = path
    return out


def _imported(name: str, node, is_package: bool, known: dict) -> set:
    """The package modules one import statement of module ``name`` imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
        return {t for t in targets if t in known}
    package = name if is_package else name.rpartition(".")[0]
    if node.level:
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    subs = {f"{prefix}.{alias.name}" for alias in node.names} & known.keys()  # ``from . import worlds``
    names_only = len(subs) < len(node.names)  # some names are the package's own (its __init__'s)
    ancestor = name.startswith(prefix + ".")  # (a parent package is imported before its modules anyway)
    return subs | ({prefix} if prefix in known and names_only and not ancestor else set())


def import_graph(known: dict) -> dict:
    """Module -> the package modules it imports (anywhere in its source)."""
    graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _imported(name, node, path.name == "__init__.py", known)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict, allowed=frozenset()) -> list:
    """The strongly connected groups of more than one module (Tarjan's algorithm), each sorted, with the
    ``allowed`` edges left out."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if (v, w) in allowed:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(groups)


def circle(group: list, graph: dict, allowed=frozenset()) -> list:
    """One closed path through a cycle group, starting at its first module (for the message)."""
    members = set(group)
    start = group[0]
    paths = [[start]]
    seen = {start}
    while paths:  # breadth first: the shortest circle back to start
        path = paths.pop(0)
        for w in sorted(graph[path[-1]] & members):
            if (path[-1], w) in allowed:
                continue
            if w == start:
                return path + [start]
            if w not in seen:
                seen.add(w)
                paths.append(path + [w])
    return group


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=str(REPO / "newton_usd"), help="the package directory (default: newton_usd)")
    p.add_argument("--top", type=int, default=15, help="how many of the largest modules to list")
    p.add_argument("--max-lines", type=int, default=MAX_LINES, help="the longest a module may be (not allow-listed)")
    args = p.parse_args(argv)
    root = Path(args.root).resolve()
    known = modules(root)
    sizes = {name: len(path.read_text().splitlines()) for name, path in known.items()}
    rel = {name: path.relative_to(root.parent).as_posix() for name, path in known.items()}
    print(f"{len(known)} modules, {sum(sizes.values())} lines; the largest:")
    for name in sorted(sizes, key=lambda n: (-sizes[n], n))[: args.top]:
        note = f"  (allowed: {LONG_MODULES[rel[name]]})" if rel[name] in LONG_MODULES else ""
        print(f"  {sizes[name]:6d}  {rel[name]}{note}")
    graph = import_graph(known)
    groups = cycles(graph, ALLOWED_EDGES)
    print(f"import graph: {sum(len(e) for e in graph.values())} imports among the package's modules, "
          f"{len(groups)} cycle{'s' if len(groups) != 1 else ''}")  # fmt: skip
    for group in groups:
        path = " -> ".join(circle(group, graph, ALLOWED_EDGES))
        print(f"  cycle: {path}  ({len(group)} modules: {', '.join(group)})")
    long = [n for n in sizes if sizes[n] > args.max_lines and rel[n] not in LONG_MODULES]
    for name in sorted(long, key=lambda n: -sizes[n]):
        print(f"  too long: {rel[name]} has {sizes[name]} lines (> {args.max_lines}): cut it by job, or allow-list it")
    return 1 if groups or long else 0


if __name__ == "__main__":
    sys.exit(main())
