"""The torch signature table (gpulint/model/values/torch_signatures.json), its generator
(scripts/gen_torch_signatures.py) and its loader (gpulint/model/values/torch_signatures.py).

The table must be what the generator makes of the installed torch's stubs; the
spot checks then read it through the loader, so a wrong table or a wrong
loader fails them. Linting must never import torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Optional

import pytest

from gpulint.model.values import torch_signatures as sigs

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO / "scripts" / "gen_torch_signatures.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_torch_signatures", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


gen = _generator()


def _torch_dir() -> Path:
    """The installed torch's package directory (found, not imported), or skip / fail."""
    torch_dir: Optional[Path] = gen.find_torch_dir()
    if torch_dir is None:
        message = "torch is not installed: the table cannot be checked against its stubs"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI is set, so this is an error: install torch)")
        pytest.skip(message)
    return torch_dir


# ---- (a) the committed table is what the installed torch gives -------------------------------------


def test_committed_table_matches_installed_torch() -> None:
    built = gen.build_table(_torch_dir())
    committed = json.loads(sigs.TABLE_PATH.read_text(encoding="utf-8"))
    assert committed == built, (
        "gpulint/model/values/torch_signatures.json is stale; regenerate it with "
        "`python3 scripts/gen_torch_signatures.py`:\n" + "\n".join(gen.diff_summary(committed, built))
    )
    assert sigs.TABLE_PATH.read_text(encoding="utf-8") == gen.render(built), "same data, different layout"


def test_check_flag_reports_a_stale_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch_dir = _torch_dir()
    table = json.loads(sigs.TABLE_PATH.read_text(encoding="utf-8"))
    table["tensor_methods"]["item"] = "tensor"
    del table["functions"]["torch.arange"]
    stale = tmp_path / "stale.json"
    stale.write_text(gen.render(table), encoding="utf-8")
    assert gen.main(["--check", "--torch-dir", str(torch_dir), "--output", str(stale)]) == 1
    out = capsys.readouterr().out
    assert "~ item: \"tensor\" -> \"number\"" in out and "+ torch.arange" in out
    fresh = tmp_path / "fresh.json"
    assert gen.main(["--torch-dir", str(torch_dir), "--output", str(fresh)]) == 0
    assert gen.main(["--check", "--torch-dir", str(torch_dir), "--output", str(fresh)]) == 0


def test_table_shape() -> None:
    table = json.loads(sigs.TABLE_PATH.read_text(encoding="utf-8"))
    assert table["generated_by"] == "scripts/gen_torch_signatures.py"
    assert sigs.table_torch_version() == table["torch_version"] != ""
    kinds = set(gen.KINDS)
    for section in ("functions", "tensor_methods", "tensor_attributes"):
        assert table[section], section
        for name, value in table[section].items():
            values = [value] if isinstance(value, str) else value
            assert set(values) <= kinds and values == sorted(values) and len(values) >= 1, (section, name)
            assert isinstance(value, str) or len(values) > 1, (section, name)
    for key, overloads in table["overloads"].items():
        section, name = ("tensor_methods", key[len("tensor."):]) if key.startswith("tensor.") else ("functions", key)
        assert name in table[section], key
        assert len(overloads) > 1 and len({json.dumps(o["kind"]) for o in overloads}) > 1, key
        for overload in overloads:
            low, high = overload["min_args"], overload["max_args"]
            assert low >= 0 and (high is None or high >= low), key


# ---- (b) what the table says about well-known names --------------------------------------------


@pytest.mark.parametrize(
    ("method", "nargs", "kind"),
    [
        ("item", None, "number"),
        ("tolist", None, "list"),
        ("cpu", None, "tensor"),
        ("cuda", None, "tensor"),
        ("to", None, "tensor"),
        ("to", 1, "tensor"),
        ("type", 0, "str"),
        ("type", 1, "tensor"),
        ("size", 0, "size"),
        ("size", 1, "number"),
        ("dim", None, "number"),
        ("__getitem__", 1, "tensor"),
    ],
)
def test_tensor_method_kinds(method: str, nargs: Optional[int], kind: str) -> None:
    assert sigs.tensor_method_kind(method, nargs) == kind


def test_overloads_that_disagree_need_the_argument_count() -> None:
    assert sigs.tensor_method_kind("type") is None  # str or tensor: the count decides
    assert sigs.kinds_of("tensor_methods", "type") == ["str", "tensor"]
    assert sigs.tensor_method_kind("size") is None
    assert sigs.tensor_method_kind("type", 5) is None  # no overload takes 5
    assert sigs.function_kind("torch.max", 1) == "tensor"  # torch.max(x)
    assert sigs.function_kind("torch.max", 3) == "tensors"  # torch.max(x, dim, keepdim)
    assert sigs.function_kind("torch.max", 2) is None  # torch.max(x, y) or torch.max(x, dim)


def test_numpy_is_not_a_tensor() -> None:
    assert sigs.tensor_method_kind("numpy") not in (None, "tensor", "tensors")


@pytest.mark.parametrize(
    ("attribute", "kind"),
    [
        ("shape", "size"),
        ("device", "device"),
        ("dtype", "dtype"),
        ("is_cuda", "number"),
        ("grad", "tensor"),
        ("T", "tensor"),
        ("ndim", "number"),
    ],
)
def test_tensor_attribute_kinds(attribute: str, kind: str) -> None:
    assert sigs.tensor_attribute_kind(attribute) == kind


@pytest.mark.parametrize(
    ("qualname", "kind"),
    [
        ("torch.arange", "tensor"),
        ("torch.zeros", "tensor"),
        ("torch.randn", "tensor"),
        ("torch.tensor", "tensor"),
        ("torch.is_tensor", "number"),
        ("torch.cuda.is_available", "number"),
        ("torch.cuda.synchronize", "none"),
        ("torch.nn.functional.relu", "tensor"),
        ("torch.topk", "tensors"),
        ("torch.split", "tensors"),
        ("torch.get_default_dtype", "dtype"),
        ("torch.linalg.norm", "tensor"),
        ("torch.fft.fft", "tensor"),
        ("torch.manual_seed", "generator"),
    ],
)
def test_function_kinds(qualname: str, kind: str) -> None:
    assert sigs.function_kind(qualname) == kind


def test_unknown_names() -> None:
    assert sigs.function_kind("torch.device") is None  # a class, not a function: not in the table
    assert sigs.function_kind("torch.no_such_function") is None
    assert sigs.function_kind("numpy.arange") is None
    assert sigs.tensor_method_kind("no_such_method") is None
    assert sigs.tensor_method_kind("no_such_method", 0) is None
    assert sigs.tensor_attribute_kind("no_such_attribute") is None
    assert sigs.kinds_of("functions", "torch.no_such_function") == []


# ---- the generator's rules, on a small fake torch ------------------------------------------------


def test_generator_rules_on_a_fake_torch(tmp_path: Path) -> None:
    files = {
        "version.py": "__version__ = '9.9.9'\n",
        "__init__.py": """
            from torch._C import *
            from torch.functional import *
            def typename(obj, /) -> str: ...
            for __name in dir(_C._VariableFunctions):
                pass
        """,
        "_C/__init__.pyi": """
            from typing import overload, TypeVar
            from torch.types import _int, _device
            import torch
            S = TypeVar("S", bound=torch.Tensor)
            def get_default_device() -> _device: ...
            def _private() -> int: ...
            class TensorBase:
                shape: Size
                grad: Tensor | None
                @property
                def is_odd(self) -> bool: ...
                def item(self) -> Number: ...
                def split(self, n: _int) -> tuple[Tensor, ...]: ...
                def clone(self) -> S: ...
                def view(self, *shape: _int) -> Self: ...
                @overload
                def type(self, dtype: None = None, non_blocking: bool = False) -> str: ...
                @overload
                def type(self, dtype: str, non_blocking: bool = False) -> Tensor: ...
        """,
        "_C/_VariableFunctions.pyi": """
            import torch
            def topk(input, k: int) -> torch.return_types.topk: ...
            def maybe(input) -> Optional[Tensor]: ...
            def either(input) -> int | Tensor: ...
            def _hidden(input) -> Tensor: ...
        """,
        "return_types.pyi": "class topk(tuple[Tensor, Tensor]): ...\n",
        "types.py": "_size: TypeAlias = Size\n",
        "_tensor.py": """
            class Tensor(torch._C.TensorBase):
                def split(self, n): ...
                def numpy(self): ...
                __pos__ = _C.TensorBase.clone
        """,
        "functional.py": """
            __all__ = ["flip", "unique"]
            def flip(x):
                # type: (Tensor) -> List[int]
                ...
            def _one(x) -> Tensor: ...
            def _two(x) -> tuple[Tensor, Tensor]: ...
            unique = boolean_dispatch(arg_name="r", if_true=_two, if_false=_one)
        """,
        "linalg/__init__.py": '''
            from torch._C import _add_docstr, _linalg
            norm = _add_docstr(_linalg.linalg_norm, r"""
            linalg.norm(A, ord=None, dim=(-2, -1)) -> Tensor
            """)
            qr = _add_docstr(_linalg.linalg_qr, "qr(A, bool some=True) -> (Tensor, Tensor)")
        ''',
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    table = gen.build_table(tmp_path)
    assert table["torch_version"] == "9.9.9"
    assert table["functions"] == {
        "torch.typename": "str",
        "torch.get_default_device": "device",  # `from torch._C import *`: public names only
        "torch.topk": "tensors",
        "torch.maybe": "tensor",  # Optional[X] is X
        "torch.either": ["number", "tensor"],
        "torch._hidden": "tensor",  # the _VariableFunctions loop binds private names too
        "torch.flip": "list",  # a type comment
        "torch.unique": ["tensor", "tensors"],
        "torch.functional.flip": "list",
        "torch.functional._one": "tensor",
        "torch.functional._two": "tensors",
        "torch.functional.unique": ["tensor", "tensors"],
        "torch.linalg.norm": "tensor",  # from the docstring's signature line
        "torch.linalg.qr": "tensors",
    }
    assert table["tensor_attributes"] == {"shape": "size", "grad": "tensor", "is_odd": "number"}
    assert table["tensor_methods"] == {
        "item": "number",
        "split": "tensors",  # Tensor's unannotated override keeps TensorBase's annotation
        "clone": "tensor",  # TypeVar bound
        "view": "tensor",  # Self
        "type": ["str", "tensor"],
        "numpy": "other",
        "__pos__": "tensor",  # an alias of TensorBase.clone
    }
    assert table["overloads"] == {
        "tensor.type": [
            {"min_args": 0, "max_args": 0, "kind": "str"},  # `dtype: None` ends the range
            {"min_args": 1, "max_args": 2, "kind": "tensor"},
        ],
        "torch.functional.unique": [
            {"min_args": 1, "max_args": 1, "kind": "tensor"},
            {"min_args": 1, "max_args": 1, "kind": "tensors"},
        ],
        "torch.unique": [
            {"min_args": 1, "max_args": 1, "kind": "tensor"},
            {"min_args": 1, "max_args": 1, "kind": "tensors"},
        ],
    }


# ---- (c) linting never imports torch ------------------------------------------------------------


def test_loader_never_imports_torch() -> None:
    code = textwrap.dedent(
        """
        import sys
        from gpulint.model.values import torch_signatures as s
        assert s.function_kind("torch.arange") == "tensor"
        assert s.tensor_method_kind("type", 0) == "str"
        assert s.tensor_attribute_kind("shape") == "size"
        assert s.table_torch_version()
        loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        assert not loaded, loaded
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
