"""The package's import graph has no cycle (style.md: dependencies point one way).

Every ``import`` of an ``xlt`` module counts, at module level or inside a function (a lazy
import that dodges a cycle at import time is still a cycle in the design); imports under
``if TYPE_CHECKING:`` are annotations and never run, so they do not. Edges are between
modules; ``from . import x`` of a submodule and ``from .x import y`` both point at ``x``. A
package's ``__init__`` re-exporting its own modules is not a dependency of those modules on
anything, so edges into a package's own ``__init__`` from inside that package are ignored.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "platform"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (annotations, never run)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def imports_of(path: Path, modules: set[str], root: Path = ROOT) -> set[str]:
    """The ``xlt`` modules ``path`` imports, wherever the import statement sits."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` imports the submodule pkg.sub when there is one.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = sorted((ROOT / "xlt").rglob("*.py"))
    modules = {module_name(p) for p in paths}
    graph = {}
    for path in paths:
        name = module_name(path)
        # Edges into an enclosing package's __init__ are re-exports, not dependencies.
        graph[name] = {t for t in imports_of(path, modules) if not name.startswith(t + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or ``None``."""
    colour: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if colour.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in colour and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        colour[node] = 2
        return None

    for node in sorted(graph):
        if node not in colour and (cycle := visit(node)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_and_accepts_a_dag() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_imports_of_counts_relative_and_lazy_imports_not_type_checking_ones(tmp_path: Path) -> None:
    modules = {"xlt", "xlt.a", "xlt.b", "xlt.b.c", "xlt.d", "xlt.e"}
    (tmp_path / "xlt").mkdir()
    path = tmp_path / "xlt" / "a.py"
    path.write_text("def f():\n    from .b import c\n    from .d import name\nimport xlt.b\n"
                    "if TYPE_CHECKING:\n    from . import e\n")
    assert imports_of(path, modules, tmp_path) == {"xlt.b", "xlt.b.c", "xlt.d"}


def test_xlt_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
