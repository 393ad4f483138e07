"""The package's import graph has no cycle, and its rooms import only the layers below them
(style.md: dependencies point one way; the layers are listed once, in docs/architecture.md).

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
ARCHITECTURE = ROOT.parent / "docs" / "architecture.md"


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


# ---- layers of rooms ---------------------------------------------------------------------------


def layers(text: str) -> dict[str, int]:
    """Room -> layer (0 = the lowest) from the fenced ``layers`` block: one line per layer, highest first."""
    block = text.split("```layers\n", 1)[1].split("```", 1)[0]
    lines = [line.split() for line in block.splitlines() if line.strip()]
    return {room: len(lines) - 1 - i for i, line in enumerate(lines) for room in line}


def room_of(module: str) -> str | None:
    """``xlt.engine.loop`` -> ``engine``; ``xlt`` itself is no room."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def rooms_on_disk(root: Path = ROOT / "xlt") -> set[str]:
    """Every package and top-level module of ``xlt``."""
    return ({p.parent.name for p in root.glob("*/__init__.py")}
            | {p.stem for p in root.glob("*.py") if p.stem != "__init__"})


def upward_imports(graph: dict[str, set[str]], level: dict[str, int]) -> list[str]:
    """Every import of a room on the importer's own layer or above it, as ``a -> b``."""
    bad = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            a, b = room_of(module), room_of(target)
            if a and b and a != b and level[b] >= level[a]:
                bad.append(f"{module} -> {target} ({a} on layer {level[a]}, {b} on {level[b]})")
    return bad


def test_the_layer_check_finds_upward_and_sideways_imports() -> None:
    level = layers("```layers\njobs\nengine eval\nmetrics\n```\n")
    assert level == {"jobs": 2, "engine": 1, "eval": 1, "metrics": 0}
    graph = {"xlt.engine.loop": {"xlt.metrics", "xlt.engine.training"}, "xlt.jobs": {"xlt.engine.loop"},
             "xlt.eval.x": {"xlt.engine.loop"}, "xlt.metrics": {"xlt.jobs"}}
    assert upward_imports(graph, level) == ["xlt.eval.x -> xlt.engine.loop (eval on layer 1, engine on 1)",
                                            "xlt.metrics -> xlt.jobs (metrics on layer 0, jobs on 2)"]


def test_every_room_is_in_the_architecture_map_once() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = text.split("```layers\n", 1)[1].split("```", 1)[0].split()
    assert len(block) == len(set(block)), "a room on two layers"
    assert set(layers(text)) == rooms_on_disk(), "docs/architecture.md's layers must name every room, and only those"
    for room in rooms_on_disk():
        assert f"| `{room}` |" in text, f"docs/architecture.md's table of rooms does not name {room}"


def test_rooms_import_only_the_layers_below_them() -> None:
    bad = upward_imports(import_graph(), layers(ARCHITECTURE.read_text(encoding="utf-8")))
    assert not bad, "imports against docs/architecture.md's layers:\n" + "\n".join(bad)


def test_predict_reads_runs_through_their_records_not_the_jobs_that_wrote_them() -> None:
    """Prediction knows a run only by its record (``xlt.record``): no module of ``xlt.predict`` imports, even
    lazily, the rooms whose runs it labels with (co-training, sweeps, studies)."""
    graph = import_graph()
    reached = {(module, target) for module, targets in graph.items() if room_of(module) == "predict"
               for target in targets if room_of(target) in ("cotrain", "sweep", "study")}
    assert not reached, f"xlt.predict imports the rooms of the jobs whose runs it reads: {sorted(reached)}"
    assert any(room_of(t) == "inference" for m, ts in graph.items() if room_of(m) == "predict" for t in ts)
