"""The package's import graph: no cycle, and no module imports another's
private name. Every import counts, also one inside a function (a lazy
import still ties the modules together); only `if TYPE_CHECKING:` blocks,
which never run, are left out."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set, Tuple

PACKAGE = Path(__file__).resolve().parent.parent / "gpulint"


def _modules() -> Dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.Module) -> Set[int]:
    skip: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _imports(modules: Dict[str, Path]) -> Tuple[Dict[str, Set[str]], List[Tuple[str, str, str]]]:
    """(module -> the gpulint modules it imports, [(module, from, private name)])."""
    edges: Dict[str, Set[str]] = {m: set() for m in modules}
    private = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                if not base.startswith("gpulint"):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    edges[name].add(sub if sub in modules else base)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append((name, base, alias.name))
            elif isinstance(node, ast.Import):
                edges[name].update(a.name for a in node.names if a.name.startswith("gpulint"))
    return {m: {t for t in ts if t in modules and t != m} for m, ts in edges.items()}, private


def _cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    edges, _ = _imports(_modules())
    assert _cycles(edges) == []


def test_no_module_imports_a_private_name_of_another():
    _, private = _imports(_modules())
    assert private == []


def test_the_checks_can_fail():
    """The two checks see a cycle and a private import when there is one."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    edges, _ = _imports(_modules())
    assert "gpulint.engine" in edges["gpulint.files"]  # imports inside the package are seen
    assert "gpulint.notebook" in edges["gpulint.files"]  # lazy ones too
    assert "gpulint.engine" not in edges["gpulint.rule"]  # but not those under TYPE_CHECKING


def test_the_engine_reaches_neither_up_to_notebooks_nor_to_front_ends():
    edges, _ = _imports(_modules())
    assert not edges["gpulint.engine"] & {"gpulint.notebook", "gpulint.files", "gpulint.runner", "gpulint.cli"}
    for harness in ("gpulint.harness.verify", "gpulint.harness.doctor"):
        assert "gpulint.cli" not in edges[harness]
