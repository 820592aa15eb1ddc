"""Which definitions of a program can run: code that nothing reaches is dead.

A strict reviewer does not count what a class that nothing builds, or a
function that nothing calls, would cost: it never runs (yolov7's `APLoss`,
yolov9's `VarifocalLoss` copied into six loss files, a sampler's
`ddim_sample_loop_progressive` that no script calls). This module answers,
for a definition that a finding sits in, whether anything in the project can
reach it.

A definition is reached when its name occurs somewhere that runs: at a
module's top level (a call, a registry, `__all__`; an import alone is no
use: `from engine import evaluate` reaches nothing until `evaluate` is used), in a
definition that is itself reached, or in any file of the project that is not
Python (a config's `_target_`, a shell script, a README). Names in string
constants count (`getattr(module, "Name")`), and so does a module's own
docstring (it names the file's entry points); comments, the docstrings of
definitions and other strings standing as statements do not (ElegantRL's
`'''AgentTD3'''` above its own class names nothing another file defines), nor
does a command line's help text (`help='prop alpha'` names no class `prop`), and a
definition's own body does not (recursion). The search is backward and
finds the least fixpoint, so two dead functions that call each other stay
dead.

It answers "reached" whenever it cannot tell, because a finding dropped for
dead code that does run is a miss:

- anything in a module that no file of the project imports, in a project
  with no script (no `if __name__ == "__main__":` block anywhere): it is
  used from where the project cannot see (a harness, a notebook
  elsewhere);
- a decorated definition (a decorator may register it);
- a dunder method, `forward`, and a method whose class has a base from
  outside the project other than `nn.Module` or `object` (the framework
  calls it: Lightning's `training_step`, a `Dataset`'s methods);
- a method of a `nn.Module` subclass whose name starts with `_` (hooks);
- a method of a class that a class of the project subclasses (its
  instances may be used through the base's methods);
- a function nested in another function (it lives and dies with it);
- a word that occurs in a Python file that cannot be parsed.

Names are compared, not what they resolve to, so one definition named like
any reached code is reached too, with one exception: a module-level
definition's name counts in another Python file only where that file may
import its module (an import path of it runs inside the module's path below
the project's root: `from train_utils import f`, `from . import engine`,
`import pkg`; or it imports everything of some module), or names it in a
string. A Mask R-CNN copy of `train_utils/train_eval_utils.py` is not
reached by a script that imports `multi_train_utils.train_eval_utils`.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from gpulint.model.index.nodes import is_main_guard
from gpulint.model.project.fixed import FixedValues
from gpulint.model.index.walk import child_nodes

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# keywords whose string is text for a person to read (argparse's)
_PROSE_KEYWORDS = frozenset({"help", "description", "epilog"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# decorators that register nothing
_PLAIN_DECORATORS = frozenset({
    "staticmethod", "classmethod", "property", "abstractmethod", "no_grad", "inference_mode",
    "enable_grad", "wraps", "cached_property", "lru_cache", "cache", "setter", "getter", "deleter",
    "overload", "override", "final",
})
# what imports a module by a name computed at run time (`importlib.import_module(args.model)`)
_DYNAMIC_IMPORTS = frozenset({"import_module", "__import__"})
# the bases whose own code calls only the methods named below (and dunders)
_MODULE_BASES = frozenset({"Module", "nn.Module", "torch.nn.Module", "object"})
_MODULE_CALLBACKS = frozenset({"forward", "extra_repr", "reset_parameters"})

# where an identifier occurs: the innermost definition around it (None: top level)
Context = Optional[ast.AST]
# and its position (line, 0-based column), where the node has one
Position = Optional[Tuple[int, int]]


def _dotted(node: ast.AST) -> str:
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        return _dotted(node.func)
    return ".".join(reversed(parts))


def _registers(decorator: ast.AST) -> bool:
    name = _dotted(decorator)
    return not name or name.rsplit(".", 1)[-1] not in _PLAIN_DECORATORS


class PythonFile:
    """One parsed file of the project: its definitions, and where each word occurs."""

    def __init__(self, tree: ast.Module, stem: str = "", parts: Tuple[str, ...] = (), package: bool = False) -> None:
        self.tree = tree
        self.stem = stem  # the module's own name (its folder's, for `__init__.py`)
        # its path below the project's root, as module parts (`("detector", "train_utils",
        # "train_eval_utils")`; the folder's, for `__init__.py`), where known
        self.parts = parts
        self.package = package  # an `__init__.py`: its parts are its package's
        self.import_paths: Set[Tuple[str, ...]] = set()  # the modules it imports, as parts
        self.star = False  # it imports everything of some module
        # it imports a module chosen at run time (`importlib.import_module(args.model)`): any of the project's
        self.dynamic = False
        self.string_words: Set[str] = set()  # words of its string constants
        self.parent: Dict[ast.AST, Context] = {}  # a definition's enclosing definition
        self.words: Dict[str, List[Tuple[Context, Position]]] = {}
        self.classes: Set[str] = set()
        self.imports: Set[str] = set()  # each part of every module name it imports
        self.bases: Set[str] = set()  # the names its classes subclass
        self.script = any(is_main_guard(n) for n in tree.body)
        # the module's docstring still counts: it names the file's entry points (`Run main()`)
        first = tree.body[0] if getattr(tree, "body", None) else None
        self.tree_docstring = first if isinstance(first, ast.Expr) else None
        self._read(tree, None)

    def _add(self, word: str, ctx: Context, pos: Position = None) -> None:
        self.words.setdefault(word, []).append((ctx, pos))

    def _read(self, node: ast.AST, ctx: Context) -> None:
        stack: List[Tuple[ast.AST, Context]] = [(node, ctx)]
        while stack:
            n, c = stack.pop()
            if isinstance(n, DEFS):
                self.parent[n] = c
                if isinstance(n, ast.ClassDef):
                    self.classes.add(n.name)
                    self.bases.update(_dotted(b).rsplit(".", 1)[-1] for b in n.bases)
                # decorators, defaults and bases run where the definition is made
                outer = list(n.decorator_list)
                if isinstance(n, ast.ClassDef):
                    outer += n.bases + [k.value for k in n.keywords]
                else:
                    outer += [d for d in n.args.defaults + n.args.kw_defaults if d is not None]
                stack.extend((o, c) for o in outer)
                stack.extend((b, n) for b in n.body)
                continue
            if isinstance(n, ast.keyword) and n.arg in _PROSE_KEYWORDS and isinstance(n.value, ast.Constant):
                continue  # a command line's help text (`help='prop alpha'`): prose, not a name
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str) \
                    and not (c is None and n is self.tree_docstring):
                continue  # a docstring, or a string standing as a statement (`'''AgentTD3'''` above a
                # class, a section title): words of documentation, not a name code looks up
            if isinstance(n, ast.Name):
                self._add(n.id, c, (n.lineno, n.col_offset))
            elif isinstance(n, ast.Attribute):
                self._add(n.attr, c, (n.end_lineno or n.lineno, max((n.end_col_offset or 0) - len(n.attr), 0)))
            if isinstance(n, ast.Import):
                for a in n.names:
                    self.imports.update(a.name.split("."))
                    self.import_paths.add(tuple(a.name.split(".")))
            elif isinstance(n, ast.ImportFrom):
                self.imports.update((n.module or "").split("."))
                self.imports.update(a.name for a in n.names)  # `from . import losses`
                base = self._import_base(n)
                if base is not None:
                    if base:
                        self.import_paths.add(base)
                    self.import_paths.update(base + (a.name,) for a in n.names if a.name != "*")
                self.star = self.star or any(a.name == "*" for a in n.names)
            if isinstance(n, ast.Call) and n.args and not isinstance(n.args[0], ast.Constant) \
                    and _dotted(n.func).rsplit(".", 1)[-1] in _DYNAMIC_IMPORTS:
                self.dynamic = True
            if isinstance(n, ast.alias) and n.asname and n.asname != n.name:
                # `from m import A as B` reaches A where B is used; an import
                # without a new name is no use of its own (the name is used
                # where it is called, or exported through `__all__`)
                self._add(n.name.rsplit(".", 1)[-1], c)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                for w in _WORD.findall(n.value):
                    self._add(w, c, (n.lineno, n.col_offset))
                    self.string_words.add(w)
            stack.extend((child, c) for child in child_nodes(n))

    def _import_base(self, node: ast.ImportFrom) -> Optional[Tuple[str, ...]]:
        """The parts of the module `from <module> import ...` reads, a relative
        one resolved against this file's package (None where it cannot be)."""
        module = tuple(node.module.split(".")) if node.module else ()
        if not node.level:
            return module
        if not self.parts:
            return None
        package = self.parts if self.package else self.parts[:-1]
        up = node.level - 1
        if up > len(package):
            return None
        return package[: len(package) - up] + module

    def may_import(self, other: "PythonFile", exists: Optional[Callable[[Tuple[str, ...]], bool]] = None) -> bool:
        """Some import of this file may read `other`'s module (or the package
        holding it): a module path of it runs inside `other`'s parts
        (`from train_utils import f` for `detector/train_utils/x.py`), or it
        imports everything of some module; or it imports a module it chooses
        at run time, and `other` is in its own folder or in a folder whose
        name it spells in a string (`sys.path.append(os.path.join(ROOT,
        'models'))`, then `importlib.import_module(args.model)`). True where
        `other`'s parts are unknown. With `exists` (whether a file of the
        project is a module), an import that its own folder's module answers
        does not read `other`."""
        if not other.parts or self.star:
            return True
        if self.dynamic and (other.parts[:-1] == self.parts[:-1]
                             or len(other.parts) > 1 and other.parts[-2] in self.string_words):
            return True  # a module of its own folder, or of a folder it names (`sys.path.append(... 'models')`)
        n = len(other.parts)
        folder = self.parts if self.package else self.parts[:-1]
        for path in self.import_paths:
            k = len(path)
            if exists is not None and k < n:
                # where its own folder holds the module, the import finds that one first (the script's
                # folder leads the search path): `from pointnet2_utils import ...` in `models/` reads
                # `models/pointnet2_utils.py`, not a copy of it saved under `log/`
                own = folder + path
                if own != other.parts[:len(own)] and exists(own):
                    continue
            if k and any(other.parts[i:i + k] == path for i in range(n - k + 1)):
                return True
        return False

    def chain(self, line: int) -> List[ast.AST]:
        """The definitions around `line`, outermost first."""
        out: List[ast.AST] = []
        body: Sequence[ast.AST] = self.tree.body
        while True:
            inner = next((d for d in body if isinstance(d, DEFS) and _first_line(d) <= line <= (d.end_lineno or 0)),
                         None)
            if inner is None:
                return out
            out.append(inner)
            body = inner.body


def _first_line(d: ast.AST) -> int:
    decorators = getattr(d, "decorator_list", [])
    return min([d.lineno] + [x.lineno for x in decorators])


class Reach:
    """Whether definitions are reached, over the files of one project.

    `files_with(word)` gives the project's files whose text holds `word`:
    ("py", key) for a Python file (`parsed(key)` gives its `PythonFile`, or
    None when it cannot be parsed) and ("text", key) for any other file."""

    # definitions looked at for one question; past it, the answer is "reached"
    BUDGET = 300

    def __init__(self, files_with: Callable[[str], Iterable[Tuple[str, str]]],
                 parsed: Callable[[str], Optional[PythonFile]],
                 module_exists: Optional[Callable[[Tuple[str, ...]], bool]] = None) -> None:
        self._files_with = files_with
        self._parsed = parsed
        self._module_exists = module_exists  # (parts) -> a file of the project is that module
        self._reached: Set[int] = set()
        self._dead: Set[int] = set()
        self._imports: Dict[int, bool] = {}
        self._entry: Optional[bool] = None
        self._left = 0
        self.fixed = FixedValues(files_with, parsed, self._context_reached, self._subclassed)

    def dead(self, pf: PythonFile, line: int, col: int = 0) -> bool:
        """A finding at `line` (and 1-based `col`) of `pf` sits in a definition
        that nothing reaches, or in a branch that the project's fixed
        parameters switch off (`gpulint.model.project.fixed`)."""
        try:
            chain = pf.chain(line)
            for d in chain:
                self._left = self.BUDGET
                if not self._is_reached(d, pf, set()):
                    return True
            self._left = self.BUDGET
            return bool(chain) and self.fixed.dead_at(pf, chain, (line, max(col - 1, 0)))
        except RecursionError:
            pass  # a chain of uses too long to follow: reached
        return False

    def _context_reached(self, ctx: Context, pf: PythonFile) -> bool:
        return ctx is None or self._is_reached(ctx, pf, set())

    def _is_reached(self, d: ast.AST, pf: PythonFile, path: Set[int]) -> bool:
        key = id(d)
        if key in self._reached:
            return True
        if key in self._dead and not path:
            return False
        if key in path:
            return False  # a cycle: reached only if something outside it reaches it
        self._left -= 1
        if self._left < 0:
            return True  # too far to tell
        path.add(key)
        found = self._assumed(d, pf, path) or self._named(d, pf, path)
        path.discard(key)
        if found:
            if self._left >= 0:
                self._reached.add(key)
        elif not path and self._left >= 0:
            self._dead.add(key)
        return found

    def _assumed(self, d: ast.AST, pf: PythonFile, path: Set[int]) -> bool:
        """Reached without looking for its name (what cannot be told stays reached),
        or dead because what encloses it is."""
        if any(_registers(x) for x in d.decorator_list):
            return True
        if not (pf.script or self._imported(pf) or self._has_entry()):
            # a module that no file of the project imports, in a project with
            # no script to start it, is used from where we cannot see (a
            # harness, a notebook elsewhere): all of it stays reached
            return True
        outer = pf.parent.get(d)
        if outer is None:
            return False
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self._is_reached(outer, pf, path)  # a closure lives with its function
        # a method
        name = d.name
        if name.startswith("__") and name.endswith("__"):
            return self._is_reached(outer, pf, path)
        bases = [_dotted(b) for b in outer.bases]
        external = [b for b in bases if b.rsplit(".", 1)[-1] not in pf.classes]
        framework = [b for b in external if b not in _MODULE_BASES]
        if framework or (external and (name in _MODULE_CALLBACKS or name.startswith("_"))) or self._subclassed(outer):
            return self._is_reached(outer, pf, path)
        return False

    def _subclassed(self, cls: ast.ClassDef) -> bool:
        """A class of the project subclasses `cls` (its instances may be used
        through the base's methods, from where nothing here shows)."""
        return any(kind == "py" and other is not None and cls.name in other.bases
                   for kind, other in ((k, self._parsed(f)) for k, f in self._files_with(cls.name)))

    def _has_entry(self) -> bool:
        """Some file of the project is a script (`if __name__ == "__main__":`)."""
        if self._entry is None:
            self._entry = any(kind == "py" and (other := self._parsed(f)) is not None and other.script
                              for kind, f in self._files_with("__main__"))
        return self._entry

    def _imported(self, pf: PythonFile) -> bool:
        """Another file of the project imports `pf`'s module (by its name)."""
        key = id(pf)
        if key not in self._imports:
            self._imports[key] = bool(pf.stem) and any(
                kind == "py" and other is not None and other is not pf and pf.stem in other.imports
                for kind, other in ((k, self._parsed(f)) for k, f in self._files_with(pf.stem)))
        return self._imports[key]

    def _named(self, d: ast.AST, pf: PythonFile, path: Set[int]) -> bool:
        """Its name occurs where code runs that is reached."""
        outer = pf.parent.get(d)
        if outer is not None and not self._is_reached(outer, pf, path):
            return False  # a method of a class that nothing reaches
        name = d.name
        for kind, key in self._files_with(name):
            if kind != "py":
                return True
            other = self._parsed(key)
            if other is None:
                return True
            if outer is None and other is not pf and name not in other.string_words and not other.may_import(
                    pf, self._module_exists):
                continue  # a module-level name of another file that cannot import this one
            for ctx, pos in other.words.get(name, ()):
                if ctx is None:
                    return True
                if other is pf and (ctx is d or _inside(ctx, d, pf)):
                    continue  # its own body
                if self._is_reached(ctx, other, path) and not (
                        pos is not None and self.fixed.dead_at(other, other.chain(pos[0]), pos)):
                    return True
        return False


def _inside(ctx: ast.AST, d: ast.AST, pf: PythonFile) -> bool:
    cur: Context = ctx
    while cur is not None:
        if cur is d:
            return True
        cur = pf.parent.get(cur)
    return False
