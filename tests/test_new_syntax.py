"""Syntax newer than the running Python's (gpulint/lowering/): PEP 695,
701 and 696, `match` and `except*` are linted on every supported Python,
with the findings a native parse gives.

The `test_core_*` tests run on this Python and, through
`test_core_cases_on_other_pythons`, in a virtualenv of the oldest and the
newest supported Python (3.9 and 3.13), where gpulint is installed from this
checkout: on 3.9 every construct here goes through the rewriting, on 3.13
none does and the differential tests force it."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from helpers import FIXTURES, ROOT, fixture_expectations, fixture_torch_version, options

from gpulint.engine import lint as engine
from gpulint.fix.noqa import add_noqa
from gpulint.engine.lint import LintError, lint_source
from gpulint.fix.apply import fix_source, validate_code
from gpulint.engine.suppress import Suppressions

DATA = Path(__file__).resolve().parent / "data" / "new_syntax"
SAMPLES = sorted(DATA.glob("*.py"))
PY = sys.version_info[:2]
OLDEST = (3, 9)


def native_parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


@contextlib.contextmanager
def lowered_to(target):
    """Lower every file to `target`'s grammar, as if this Python were that old."""
    old = engine.FORCE_LOWER_TO
    engine.FORCE_LOWER_TO = target
    try:
        yield
    finally:
        engine.FORCE_LOWER_TO = old


def key(f):
    edits = f.fix and tuple((e.start, e.end, e.content) for e in f.fix.edits)
    return (f.code, f.row, f.col, f.end_row, f.end_col, f.noqa_row, f.message, edits)


def lint(text, path="snippet.py", torch_version=None, target=None):
    opts = options(torch_version=torch_version) if torch_version else options()
    with lowered_to(target):
        return lint_source(text, path, opts)


def dump(tree) -> str:
    return ast.dump(tree, include_attributes=True)


# ------------------------------------------------------------------ samples of each construct
@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_core_samples_give_their_expected_findings(path):
    text = path.read_text(encoding="utf-8")
    expected = fixture_expectations(text)
    assert expected, "a sample without `# expect:` tests nothing"
    got = {(f.row, f.code) for f in lint(text, path.name)}
    assert got == expected


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_core_samples_forced_through_the_rewriting_match_a_native_parse(path):
    text = path.read_text(encoding="utf-8")
    if not native_parses(text):
        pytest.skip(f"Python {PY[0]}.{PY[1]} cannot parse it natively to compare")
    native = [key(f) for f in lint(text, path.name)]
    assert native
    assert [key(f) for f in lint(text, path.name, target=OLDEST)] == native


def test_core_only_the_fallback_rewrites():
    for path in SAMPLES:
        text = path.read_text(encoding="utf-8")
        tree = engine.parse(text, path.name)
        assert hasattr(tree, "gpulint_lowered_text") == (not native_parses(text)), path.name


def test_core_a_file_that_parses_natively_never_loads_the_rewriting():
    code = (
        "import sys; from gpulint.engine.lint import parse, lint_source; from helpers import options\n"
        "parse('x = 1\\n', 'x.py'); lint_source('import torch\\nfor x in y:\\n    print(x.item())\\n', 'x.py', options())\n"
        "print('gpulint.lowering' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


# ------------------------------------------------------------------ exact trees where this Python has the nodes
MATCHES = [
    "match x:\n    case 1:\n        pass\n",
    textwrap.dedent('''\
        match (a, b):
            case (1, 2) | [3, *rest] if rest:
                y = 1
            case {"k": v, **kw}:
                pass
            case Point(1, y=(2)) as p:
                pass
            case -1 | 1+2j | "a" "b" | None | True | b"x" | 0x1F:
                pass
            case A.B.C(x=[1, {2: _}], y=None) if (lambda: 1)():
                pass
            case () | [] | {} | {**rest}:
                pass
            case _:
                pass
    '''),
    textwrap.dedent('''\
        match a, *b,:
            case a, *_,:
                pass
            case (x):
                pass
            case ((1 | 2) as z) if (w := z):
                pass
            case [a, (b)] as c:
                pass
        match *a, b:
            case [*_, c]: pass
        match a,:
            case b,: pass
    '''),
    textwrap.dedent('''\
        match = re.match(r"x", s)
        case = 1
        def f(ñame):
            match ñame, "é":
                case (str() as s, "é") if s == "ü" or \\
                        s:
                    return s
                case [
                    a,  # a comment
                    *rest,
                ]:
                    match \\
                        ñame:
                        case (  # comment
                            1
                            | 2
                        ) as z:
                            pass
                case "é" | "日本": y = "é"; z = "x"

            # a comment between cases
        async def g():
            match await h():
                case x if [y async for y in z]:
                    pass
        for i in x:
            match(i):
                case Point(x, y, z=3) | Point(_, _, z=_):
                    break
                case int(n) if n > (m := 3):
                    continue
    '''),
]
TRY_STARS = [
    "try:\n    pass\nexcept* ValueError as e:\n    pass\nexcept *(TypeError, KeyError):\n    pass\nelse:\n"
    "    pass\nfinally:\n    pass\n",
    "def f():\n    try:\n        match x:\n            case 1:\n                pass\n    except \\\n  * E:\n        pass\n",
]


@pytest.mark.skipif(PY < (3, 10), reason="ast.Match is new in Python 3.10: nothing native to compare with")
@pytest.mark.parametrize("src", MATCHES)
def test_core_match_statements_read_back_as_the_native_tree(src):
    from gpulint import lowering

    assert dump(lowering.parse(src, "x.py", target=OLDEST)) == dump(ast.parse(src))


@pytest.mark.skipif(PY < (3, 11), reason="ast.TryStar is new in Python 3.11: nothing native to compare with")
@pytest.mark.parametrize("src", TRY_STARS)
def test_core_except_star_reads_back_as_the_native_tree(src):
    from gpulint import lowering

    assert dump(lowering.parse(src, "x.py", target=OLDEST)) == dump(ast.parse(src))


PEP695 = [
    'def f[Tü: "é", *Ts](x: Tü) -> Tü: return x.item() + f"{d["é"]}"\n',
    'class C[\n  Tü,  # é comment\n  U = int,\n](B): x = f"{y["日"]}"; z = 1\n',
    "type Aé[T] = dict[\n    str, T]\nx = 1\n",
    "if x:\n    type \\\n        Y = int\n",
    "@dec\nclass D[T](Generic[T], metaclass=M):\n    def m[U](self, u: U) -> U: ...\n",
]


@pytest.mark.parametrize("src", PEP695)
def test_core_pep695_reads_back_as_the_native_tree_without_type_parameters(src):
    from gpulint import lowering

    if PY < (3, 12):  # nothing native to compare with: it parses through the rewriting
        assert engine.parse(src, "x.py").gpulint_lowered_text
        return
    native = ast.parse(src)
    for node in ast.walk(native):
        if hasattr(node, "type_params"):
            node.type_params = []  # blanked: not in the rewritten tree
    assert dump(lowering.parse(src, "x.py", target=OLDEST)) == dump(native)


def test_core_pep696_defaults_alone_are_blanked_for_python_3_12():
    if PY < (3, 13):
        pytest.skip("PEP 696 is new in Python 3.13: nothing native to compare with")
    from gpulint import lowering

    text = (DATA / "pep696_defaults.py").read_text(encoding="utf-8")
    lowered = lowering.lower(text, target=(3, 12))
    assert "class Loop[M: torch.nn.Module                  , *Ts                   ]:" in lowered
    assert "def first[T      , **P             ](xs: list[T]) -> T:" in lowered
    native, low = ast.parse(text), lowering.parse(text, "x.py", target=(3, 12))
    for node in [*ast.walk(native), *ast.walk(low)]:
        if hasattr(node, "default_value"):  # what 3.12's tree has no field for, nor an end past the name
            node.default_value = node.end_lineno = node.end_col_offset = None
    assert dump(low) == dump(native)


def test_core_match_statements_on_every_python():
    """On 3.9 the tree has stand-ins for the nodes of 3.10: same names and fields."""
    from gpulint import lowering

    tree = lowering.parse(MATCHES[1], "x.py", target=OLDEST)
    m = tree.body[0]
    assert type(m).__name__ == "Match" and isinstance(m, ast.stmt)
    assert [type(c.pattern).__name__ for c in m.cases] == [
        "MatchOr", "MatchMapping", "MatchAs", "MatchOr", "MatchClass", "MatchOr", "MatchAs"
    ]
    assert isinstance(m.cases[0].guard, ast.Name) and m.cases[0].body[0].lineno == 3
    assert (m.lineno, m.col_offset, m.end_lineno) == (1, 0, 15)


# ------------------------------------------------------------------ the repo's fixtures, wrapped in match and except*
_HEADER = (
    "match {subject}:\n"
    "    case [1, *_] | {{\"k\": _}} if False:\n"
    "        pass\n"
    "    case Point(x=0) | (_ as anything):\n"
)


def wrap_functions(text: str, star: bool) -> str:
    """Each outermost function's body put in the last case of a match
    statement (and, with `star`, in a `try` with an `except*`)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    funcs = []

    def visit(node, in_func):
        for ch in ast.iter_child_nodes(node):
            is_func = isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef))
            if is_func and not in_func:
                funcs.append(ch)
            visit(ch, in_func or is_func)

    visit(tree, False)
    for fn in sorted(funcs, key=lambda f: f.lineno, reverse=True):  # bottom up: line numbers above stay
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if not body or body[0].lineno == fn.lineno:
            continue
        first, last = body[0].lineno, fn.end_lineno
        indent = lines[first - 1][: body[0].col_offset]
        subject = fn.args.args[0].arg if fn.args.args else "0"
        head = [indent + line + "\n" for line in _HEADER.format(subject=subject).splitlines()]
        pad = " " * 8
        tail = []
        if star:
            head.append(indent + pad + "try:\n")
            pad += " " * 4
            tail = [indent + " " * 8 + "except* ValueError:\n", indent + " " * 12 + "pass\n"]
        body_lines = [pad + line if line.strip() else line for line in lines[first - 1 : last]]
        lines[first - 1 : last] = head + body_lines + tail
    return "".join(lines)


def wrap(text: str, star: bool) -> str:
    """`wrap_functions`, then the same for the whole module (after its
    docstring and `__future__` imports)."""
    text = wrap_functions(text, star)
    tree = ast.parse(text)
    body = [s for s in tree.body if not (isinstance(s, ast.ImportFrom) and s.module == "__future__")]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if not body:
        return text
    lines = text.splitlines(keepends=True)
    first = min([body[0].lineno] + [d.lineno for d in getattr(body[0], "decorator_list", ())])
    head = [line + "\n" for line in _HEADER.format(subject="__name__").splitlines()]
    pad, tail = " " * 8, []
    if star:
        head.append(pad + "try:\n")
        pad += " " * 4
        tail = [" " * 8 + "except* ValueError:\n", " " * 12 + "pass\n"]
    rest = lines[first - 1 :]
    if rest and not rest[-1].endswith(("\n", "\r")):
        rest[-1] += "\n"
    return "".join(lines[: first - 1] + head + [pad + line if line.strip() else line for line in rest] + tail)


FIXTURE_FILES = sorted(FIXTURES.glob("*/*.py"))


def test_core_fixtures_wrapped_in_match_and_except_star_read_back_natively():
    """The strongest check: every fixture, its functions and its module body
    wrapped in match statements (and in try/except*), rewritten for Python
    3.9 and read back, gives the tree of a native parse, and so the same
    findings, fixes included."""
    if PY < (3, 10):
        pytest.skip("Python 3.9 parses no match statement natively to compare with")
    from gpulint import lowering

    compared = findings = 0
    for path in FIXTURE_FILES:
        text = path.read_text(encoding="utf-8")
        opts = options(torch_version=fixture_torch_version(text))
        for star in (False, True) if PY >= (3, 11) else (False,):
            wrapped = wrap(text, star)
            assert wrapped.count("match ") > text.count("match "), path
            tree = lowering.parse(wrapped, path.name, target=OLDEST)
            assert dump(tree) == dump(ast.parse(wrapped)), (path, star)
            native = [key(f) for f in lint_source(wrapped, path.name, opts)]
            assert [key(f) for f in lint_source(wrapped, path.name, opts, tree=tree)] == native, (path, star)
            compared += 1
            findings += len(native)
    assert compared >= len(FIXTURE_FILES) and findings > 150, (compared, findings)


# ------------------------------------------------------------------ f-strings
FSTRINGS = [
    ('f"{d["k"]}"', 'f"{d[\'k\']}"'),
    ("f'{d['k']}'", "f'{d[\"k\"]}'"),
    ('f"{"\\n".join(a)}"', 'f"{____.join(a)}"'),  # a backslash: the string becomes a name of its size
    ('f"{x!r:>{w}} {y=}"', 'f"{x!r:>{w}} {y=}"'),
    ('f"{x:{"<" if a else ">"}10}"', "f\"{x:{'<' if a else '>'}10}\""),
    ('f"""{d["k"]} {x # c\n}"""', 'f"""{d["k"]} {x    \n}"""'),
    ('f"{x # c\n}"', 'f"(x # \\\n)"'),  # a one-line f-string over two lines: its text only
    ('f"{d["it\'s"]}"', 'f"{d[______]}"'),
    ('f"{d["é"] + d["日本"]}" + f"{1}"', "f\"{d['é'] + d['日本']}\" + f\"{1}\""),
    ("f'''{d['''k''']}'''", "f'''{d[\"\"\"k\"\"\"]}'''"),
    ('f"{f"{x}"}"', "f\"{f'{x}'}\""),
    ('f"{f"{f"{x}"}"}"', "f\"{f'{______}'}\""),
    ('f"{x:{y:{z}}}"', 'f"(x:(y:(z)))"'),
    ('rf"{d["k"]}\\d"', "rf\"{d['k']}\\d\""),
]


@pytest.mark.parametrize("src, lowered", FSTRINGS)
def test_core_fstrings_are_rewritten_in_place(src, lowered):
    from gpulint import lowering

    text = f"v = {src}\n"
    out = lowering.lower(text, target=OLDEST)
    assert out == f"v = {lowered}\n"
    # same lines and UTF-8 columns
    assert [len(line.encode()) for line in out.splitlines()] == [len(line.encode()) for line in text.splitlines()]
    compile(out, "x.py", "exec")  # and this Python reads it


def test_core_fstring_positions_are_those_of_a_native_parse():
    if PY < (3, 12):
        pytest.skip("PEP 701 f-strings are new in Python 3.12: nothing native to compare with")
    from gpulint import lowering

    for src, lowered in FSTRINGS:
        text = f"v = {src}\nw = 1\n"
        if "_" in lowered or "(x" in lowered:
            continue  # a placeholder: the expressions it replaced are not in the tree
        assert dump(lowering.parse(text, "x.py", target=OLDEST)) == dump(ast.parse(text)), src


# ------------------------------------------------------------------ suppressions, fixes, errors
NOQA = '''import torch


def train(model, loader, optimizer, device, log):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        log(f"{"# noqa"} {loss.item()}")
        log(f"{
            loss.item()
        }")  # noqa: GPU101
'''


def test_core_noqa_is_read_from_real_comments_only():
    # before 3.12 tokenize reads `# noqa"} ...` on line 9 as a comment; the rewritten text has none there
    # (the comment of line 12 is read too: on the last line of its statement, it suppresses nothing)
    got = [(f.row, f.code) for f in lint(NOQA, "train.py")]
    assert got == [(9, "GPU101"), (12, "GPU900")]
    assert [(f.row, f.code) for f in lint(NOQA, "train.py", target=OLDEST)] == got
    tokens = engine.parse(NOQA, "train.py")
    sup = Suppressions(NOQA, tokens_text=getattr(tokens, "gpulint_lowered_text", None))
    assert set(sup.by_line) == {12}


def test_core_add_noqa_on_a_file_of_newer_syntax():
    findings = [f for f in lint(NOQA, "train.py") if f.code != "GPU900"]
    res = add_noqa(NOQA, findings)
    assert res.added == 1 and not res.unplaceable
    assert '        log(f"{"# noqa"} {loss.item()}")  # noqa: GPU101\n' in res.text
    assert [(f.row, f.code) for f in lint(res.text, "train.py")] == [(12, "GPU900")]  # (unused before too)


def _fix(text, path, unsafe=False, target=None):
    with lowered_to(target):
        return fix_source(text, path, options(), unsafe=unsafe)


def test_core_fix_works_on_a_file_of_newer_syntax():
    text = (DATA / "fix_targets.py").read_text(encoding="utf-8")
    res = _fix(text, "fix_targets.py", unsafe=True)
    assert res.fixed_count == 2 and res.remaining == []
    assert "opt.zero_grad(set_to_none=True)" in res.text and 'with torch.amp.autocast("cuda"):' in res.text
    assert "def step[T: torch.optim.Optimizer](opt: T" in res.text and 'print(f"{batch["x"].shape}")' in res.text
    assert validate_code(res.text, "fix_targets.py") is None
    assert res.text == _fix(text, "fix_targets.py", unsafe=True, target=OLDEST).text


def test_core_validate_code_still_refuses_broken_newer_syntax():
    good = "def f[T](x: T) -> T:\n    return x\n"
    assert validate_code(good, "x.py") is None
    assert validate_code("def f[T](x: T) -> T:\n    return x +\n", "x.py") is not None
    assert validate_code("type X = int\nreturn 1\n", "x.py") is not None  # `return` outside a function


def test_core_fix_cli_on_a_file_of_newer_syntax(tmp_path):
    (tmp_path / "train.py").write_text((DATA / "fix_targets.py").read_text(encoding="utf-8"), encoding="utf-8")
    env = dict(os.environ, GPULINT_NO_CACHE="1", PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-m", "gpulint", "fix", "--apply", "--unsafe-fixes", "train.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    fixed = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "set_to_none=True" in fixed and "torch.amp.autocast" in fixed


def test_core_syntax_errors_are_reported_as_before():
    for src in ["x = (\n", "match x:\n    case 1:\n        pass\ny = (\n"]:
        try:
            ast.parse(src)
        except SyntaxError as exc:
            want = f"syntax error at {exc.lineno}:{exc.offset}: {exc.msg} (Python {PY[0]}.{PY[1]} grammar)"
            where = (exc.lineno, exc.offset)
        else:  # pragma: no cover
            raise AssertionError(src)
        with pytest.raises(LintError) as info:
            engine.parse(src, "x.py")
        assert str(info.value) == want and info.value.location == where


def test_core_syntax_that_cannot_be_rewritten_says_so():
    # a replacement field over lines with an empty one, in a one-line f-string (valid on 3.12)
    src = 'x = 1\nv = f"{\n\nx}"\n'
    with lowered_to(OLDEST), pytest.raises(LintError) as info:
        engine.parse(src, "x.py")
    msg = str(info.value)
    assert msg.startswith("syntax error at 3:") and "could not rewrite" in msg and "empty line" in msg, msg
    assert info.value.location[0] == 3


@pytest.mark.parametrize(
    "expr",
    ["(" * 5000 + "1" + ")" * 5000, "-" * 100000 + "1", "+".join(["a"] * 20000),
     "torch.zeros(1)" + ".cuda()" * 20000, "lambda: " * 20000 + "0"],
    ids=["parentheses", "unary", "binary-chain", "attribute-chain", "lambdas"],
)
def test_core_nesting_that_would_crash_libcst_is_not_given_to_it(expr):
    """LibCST's parser recurses without a limit (a segfault past a few
    thousand levels): such a file keeps the native parser's error."""
    from gpulint import lowering

    src = f"x = {expr}\n"
    with pytest.raises(lowering.NotPython):
        lowering.lower(src, target=OLDEST)
    with lowered_to(OLDEST), pytest.raises(LintError):
        engine.parse(src, "x.py")


def test_core_node_positions_without_libcst_internals(monkeypatch):
    """The spans come from LibCST's code generation; if its internals change,
    from its PositionProvider: the same result."""
    from gpulint import lowering

    texts = [p.read_text(encoding="utf-8") for p in SAMPLES] + MATCHES + ["a = 1\r\nmatch a:\r    case 1: pass\r\n"]
    fast = [lowering.lower(t, target=OLDEST) for t in texts]

    class Broken:
        def __init__(self, module):
            raise AttributeError("no such internals")

    monkeypatch.setattr("gpulint.lowering.cst_nodes._SpanState", Broken)
    assert [lowering.lower(t, target=OLDEST) for t in texts] == fast


def test_core_notebook_cells_of_newer_syntax(tmp_path):
    from gpulint.engine.notebook import Notebook, lint_notebook
    from gpulint.fix.notebook import fix_notebook

    cells = [
        "import torch\nfrom transformers import AutoModel\ndevice = 'cuda'\nbert = AutoModel.from_pretrained('bert-base-uncased')\n",
        "def train[T](model: T, loader, opt):\n    for x, y in loader:\n"
        "        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))\n"
        "        loss.backward()\n        opt.step()\n"
        "        match loss.ndim:\n            case 0:\n                print(f\"{loss.item()} {'é'}\")\n",
        "opt.zero_grad(set_to_none=False)\nawait asyncio.sleep(0)\nprint(f\"{d[\"k\"]}\")\n",
    ]
    nb = {
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": c.splitlines(keepends=True)} for c in cells],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    }
    book = Notebook.from_bytes(json.dumps(nb).encode())
    got = [(f.cell, f.row, f.code) for f in lint_notebook(book, "nb.ipynb", options())]
    assert got == [(2, 4, "GPU403"), (2, 8, "GPU101"), (3, 1, "GPU302")]
    # the fixed program is checked as IPython runs it: newer syntax, and a top-level `await`
    res = fix_notebook(book, "nb.ipynb", options(), unsafe=True)
    assert res.fixed_count == 2
    new = {n: src for n, _, src in res.cells}
    assert "set_to_none=True" in new[3] and 'print(f"{d["k"]}")' in new[3] and "set_float32_matmul_precision" in new[1]


# ------------------------------------------------------------------ the oldest and the newest supported Python
OTHER_PYTHONS = ["3.9", "3.13"]


def _find_python(version: str):
    """An interpreter of `version`: pyenv's versions directory first (its
    shims fail when that version is not selected), then PATH."""
    root = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"
    candidates = sorted(root.glob(f"{version}.*/bin/python{version}"), reverse=True)
    found = shutil.which(f"python{version}")
    if found:
        candidates.append(Path(found))
    for exe in candidates:
        try:
            out = subprocess.run([str(exe), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return str(exe)
    return None


def _venv(version: str, exe: str) -> Path:
    """A virtualenv of `exe` with gpulint (from this checkout) and pytest,
    cached by the project's pyproject.toml (its dependencies)."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + exe.encode()).hexdigest()[:12]
    cache = Path(os.environ.get("GPULINT_TEST_VENVS") or Path(tempfile.gettempdir()) / "gpulint-test-venvs")
    final = cache / f"py{version}-{digest}"
    if (final / ".ready").exists():
        return final
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"py{version}-", dir=cache))
    src = work / "src"
    shutil.copytree(ROOT / "gpulint", src / "gpulint", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    env_dir = work / "venv"
    subprocess.run([exe, "-m", "venv", str(env_dir)], check=True, capture_output=True, timeout=300)
    py = env_dir / "bin" / "python"
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(src), "pytest"],
        capture_output=True, text=True, timeout=600,
    )
    if pip.returncode != 0:
        raise AssertionError(f"pip install into a Python {version} virtualenv failed:\n{pip.stdout}\n{pip.stderr}")
    (env_dir / ".ready").write_text("ok\n")
    try:
        os.rename(env_dir, final)  # atomic: another run may have made it meanwhile
    except OSError:
        pass
    shutil.rmtree(work, ignore_errors=True)
    return final


@pytest.mark.skipif(bool(os.environ.get("GPULINT_NEW_SYNTAX_CHILD")), reason="already in the other Python")
@pytest.mark.parametrize("version", OTHER_PYTHONS)
def test_core_cases_on_other_pythons(version):
    exe = _find_python(version)
    if exe is None:
        why = f"no Python {version} found (pyenv versions directory or python{version} on PATH)"
        if os.environ.get("CI"):
            pytest.fail(why + ": CI must test the oldest and the newest supported Python")
        pytest.skip(why)
    venv = _venv(version, exe)
    env = dict(os.environ, GPULINT_NEW_SYNTAX_CHILD="1", PYTHONPATH=str(ROOT), GPULINT_NO_CACHE="1")
    env.pop("PYTHONHOME", None)
    run = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", str(Path(__file__)), "-q", "-p", "no:cacheprovider",
         "-k", "core", "-rs"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, f"Python {version}:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    assert " passed" in run.stdout and " failed" not in run.stdout, run.stdout
