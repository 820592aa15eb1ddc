"""The package's architecture: its import graph has no cycle, no module
imports another's private name, every import runs down the layers of
pyproject.toml's import-linter contracts, and no module or class is over the
size limits. Every import counts, also one inside a function (a lazy import
still ties the modules together); only `if TYPE_CHECKING:` blocks, which
never run, are left out."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
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
    assert "gpulint.engine.lint" in edges["gpulint.engine.files"]  # imports inside the package are seen
    assert "gpulint.engine.notebook" in edges["gpulint.engine.files"]  # lazy ones too
    assert "gpulint.engine.lint" not in edges["gpulint.rule"]  # but not those under TYPE_CHECKING


def test_the_folders_show_the_architecture():
    """The engine, the fix layer and the front ends each have their folder,
    and nothing of theirs is left at the top of the package."""
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == {"__init__", "__main__", "edits", "fsutil", "registry", "rule", "source", "workloads"}, top
    for folder, modules in (("engine", {"lint", "files", "notebook", "config", "runner", "cache"}),
                            ("fix", {"apply", "notebook", "files", "noqa"}),
                            ("frontends", {"cli", "flake8_plugin", "docs"})):
        assert modules <= {p.stem for p in (PACKAGE / folder).glob("*.py")}, folder


def test_the_engine_reaches_neither_up_to_notebooks_nor_to_front_ends():
    edges, _ = _imports(_modules())
    assert not edges["gpulint.engine.lint"] & {"gpulint.engine.notebook", "gpulint.engine.files", "gpulint.engine.runner", "gpulint.frontends.cli"}
    for harness in ("gpulint.harness.verify", "gpulint.harness.doctor"):
        assert "gpulint.frontends.cli" not in edges[harness]


# --------------------------------------------------------------- layers
ROOT = PACKAGE.parent
LINT_IMPORTS = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))"
)


def _lint_imports(cwd: Path, config: Path) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run([sys.executable, "-c", LINT_IMPORTS, str(config)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_import_linter_contracts_hold():
    """The layers of pyproject.toml's [tool.importlinter]: every import of the
    package runs down, the model's layers too, and rules are independent."""
    proc = _lint_imports(ROOT, ROOT / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    contracts = (ROOT / "pyproject.toml").read_text(encoding="utf-8").count("[[tool.importlinter.contracts]]")
    assert contracts >= 6  # the package, its three folders, the model, the rules
    assert f"{contracts} kept, 0 broken" in proc.stdout, proc.stdout


def test_the_contracts_can_fail(tmp_path):
    """The same check, on a package whose lower layer imports an upper one."""
    pkg = tmp_path / "layered"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "high.py").write_text("X = 1\n")
    (pkg / "low.py").write_text("from layered.high import X\n")
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "layered"\n\n[[tool.importlinter.contracts]]\n'
        'name = "down"\ntype = "layers"\nlayers = ["layered.high", "layered.low"]\n'
    )
    proc = _lint_imports(tmp_path, config)
    assert proc.returncode != 0 and "layered.low -> layered.high" in proc.stdout, proc.stdout


# The model's layers hand each other on as attributes of the FileModel
# (`fa.values`, `fa.loops`, ...). Import contracts cannot see a lower layer
# reaching an upper one through such an attribute, so this does: a module of
# a layer never names the handle of a layer above it.
HANDLES_ABOVE = {
    "gpulint.model.index": {"imports", "values", "host", "steps", "loops", "contexts"},
    "gpulint.model.names": {"values", "host", "steps", "loops", "contexts"},
    "gpulint.model.values": {"steps", "loops", "contexts"},
}


def _handles_used(path: Path) -> Set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id in ("fa", "model", "analysis")} | {
        n.attr for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr in ("fa", "analysis")
    }


def test_no_model_layer_reaches_up_through_the_file_model():
    bad = []
    for name, path in sorted(_modules().items()):
        for layer, above in HANDLES_ABOVE.items():
            if name == layer or name.startswith(layer + "."):
                used = _handles_used(path) & above
                if used:
                    bad.append((name, sorted(used)))
    assert bad == []


def test_the_handle_check_can_fail(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f(fa, node):\n    return fa.loops.hot_loop(node, []) or fa.values.kind(node, [])\n")
    assert _handles_used(p) >= {"loops", "values"}


# ---------------------------------------------------------------- sizes
MAX_MODULE_LINES = 800
MAX_CLASS_LINES = 400
def _oversized() -> Set[str]:
    out = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES:
            out.add(rel)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                out.add(f"{rel}:{node.name}")
    return out


def test_no_module_or_class_is_over_the_size_limits():
    assert _oversized() == set()


def test_the_size_check_can_fail(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "MAX_CLASS_LINES", 5)
    assert any(":" in k for k in _oversized())  # every rule class is longer than 5 lines


def test_one_default_torch_version():
    """The engine's default options and the config read the same constant."""
    from gpulint import rule
    from gpulint.engine import config
    from gpulint.engine import lint as engine

    assert engine.LintOptions(codes=()).torch_version == rule.LATEST_TORCH
    assert config.LATEST_TORCH is rule.LATEST_TORCH
    literal = repr(rule.LATEST_TORCH)
    holders = [p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py") if literal in p.read_text(encoding="utf-8")]
    assert holders == ["gpulint/rule.py"]


def test_the_fast_subset_names_files_that_exist():
    # a renamed test file must not slip into (or out of) the fast subset unnoticed
    from conftest import SLOW_FILES

    here = Path(__file__).resolve().parent
    assert SLOW_FILES and all((here / name).is_file() for name in SLOW_FILES), sorted(
        n for n in SLOW_FILES if not (here / n).is_file())
