"""The per-file index: the text, the tree walked once, and the questions about
the tree's shape that every layer asks (parents, ancestors, the block a
statement sits in, every node of a type). Each answer is built once per file."""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from gpulint.model.index.nodes import OWNERS, is_main_guard
from gpulint.model.index.walk import index_tree

_T = TypeVar("_T")

# plain substrings first (`in` is several times faster than one alternation)
_ACCELERATOR_WORDS = ("cuda", ".to(", "device", "gpu", "accelerat", "Fabric", "fabric", "lightning", "Trainer")
# ... and these device names as words (`_names_a_device`)
_ACCELERATOR_DEVICES = ("mps", "xpu", "npu", "hpu")
_CUDA_GRAPH_WORDS = (
    "CUDAGraph", "cuda.graph(", "make_graphed_callables", "CudaGraphModule", "reduce-overhead", "max-autotune",
    "cudagraphs",
)


# the words found in the text being linted (`text_mentions`): the engine, the
# index and the rules' needles ask about the same text, each word scanned once
_LAST_TEXT: Tuple[Optional[str], Dict[str, bool]] = (None, {})


def text_mentions(text: str) -> Dict[str, bool]:
    """word -> whether `text` holds it, for the words asked so far: one dict
    per text, kept for the last text asked about (the file being linted;
    the engine asks about one file's text at a time)."""
    global _LAST_TEXT
    last = _LAST_TEXT
    if last[0] is text:
        return last[1]
    words: Dict[str, bool] = {}
    _LAST_TEXT = (text, words)  # (one assignment: a thread never sees another text's words)
    return words


def mentions(text: str, word: str) -> bool:
    """`word in text`, scanned once per text and word (`text_mentions`)."""
    return _mentioned(text_mentions(text), text, word)


def _mentioned(words: Dict[str, bool], text: str, word: str) -> bool:
    hit = words.get(word)
    if hit is None:
        hit = words[word] = word in text
    return hit


def may_use_accelerator(text: str) -> bool:
    """The text mentions anything that can put tensors on an accelerator: CUDA,
    `.to(`, a device, a GPU, accelerate / Fabric / Lightning / a Trainer, or
    MPS / XPU / NPU / HPU."""
    words = text_mentions(text)
    hit = words.get("\0accelerator")
    if hit is None:
        hit = words["\0accelerator"] = any(mentions(text, w) for w in _ACCELERATOR_WORDS) or _names_a_device(text)
    return hit


def _names_a_device(text: str) -> bool:
    """One of `_ACCELERATOR_DEVICES` is a word of the text (`\\b(mps|...)\\b`), by
    plain scans for each and a look at the characters around each occurrence
    (`npu` is in every `input`): several times faster than that pattern over
    a long text."""
    n = len(text)
    for w in _ACCELERATOR_DEVICES:
        i = text.find(w)
        while i >= 0:
            end = i + len(w)
            if (i == 0 or not _word_char(text[i - 1])) and (end >= n or not _word_char(text[end])):
                return True
            i = text.find(w, i + 1)
    return False


def _word_char(c: str) -> bool:
    """`c` is matched by the pattern `\\w`."""
    return c.isalnum() or c == "_"


# a test framework: what a module named like a test uses when it is one
_TEST_FRAMEWORK = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:pytest|unittest)\b|\bTestCase\b", re.M)


# a test function pytest collects without an import; a program's entry
_TEST_FUNCTION = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+test_", re.M)
# folders every file of which is a test suite's (accelerate's `test_utils/scripts/`);
# research code keeps evaluation scripts in `test/` (`is_test_path`)
_TEST_ONLY_FOLDERS = frozenset(["tests", "testing", "test_utils"])
_PROGRAM = re.compile(r"^if[ \t]+__name__[ \t]*==|ArgumentParser|parse_args", re.M)


def is_test_path(path: str, text: Optional[str] = None) -> bool:
    """A test module: `conftest.py`, a file under a test folder (`tests/`,
    `test/`, `testing/`, accelerate's `test_utils/scripts/`), or one named
    `test_*.py` / `*_test.py`. With `text`, a file that only its name
    calls a test is one when it uses a test framework (pytest, unittest):
    research code names its evaluation scripts `test_net.py` or
    `test_ddgan.py`, and its tools `split_train_test.py`. A file in a
    `test/` folder is one unless it is a program of its own (an `if
    __name__ == "__main__":` block or a command line) that uses no test
    framework and defines no test function: research code keeps its
    evaluation scripts there (Uformer's `test/test_sidd.py`). Under
    `tests/`, `testing/` or `test_utils/`, every file is (a library's test
    helpers and scripts)."""
    p = path.replace("\\", "/")
    parts = p.split("/")
    base = parts[-1]
    folders = parts[:-1]
    if base == "conftest.py" or any(d in _TEST_ONLY_FOLDERS for d in folders):
        return True
    in_folder = "test" in folders
    named = base.startswith("test_") or base.endswith("_test.py")
    if not (in_folder or named) or text is None:
        return in_folder or named
    if _TEST_FRAMEWORK.search(text) is not None:
        return True
    return in_folder and (_TEST_FUNCTION.search(text) is not None or _PROGRAM.search(text) is None)


class TreeIndex:
    """One file's text and tree, indexed once."""

    def __init__(self, tree: ast.Module, text: str, path: str = "", like: Optional["TreeIndex"] = None) -> None:
        self.tree = tree
        self.text = text
        self.path = path
        # one fast walk gives every node in pre-order with its depth, and parents
        # (`like`: an index of the same tree, whose walk is reused; its memos are not)
        self.order, self.parents = (like.order, like.parents) if like is not None else index_tree(tree)
        self.uses_cuda = "cuda" in text
        # anything that can put tensors on an accelerator: CUDA, a `.to(device)`,
        # accelerate / Fabric / Lightning, a `device` variable, MPS/XPU/NPU
        self.may_use_accelerator = may_use_accelerator(text)
        self._memo: Dict[str, Dict[object, object]] = {}
        self._by_type: Optional[Dict[type, List[ast.AST]]] = like._by_type if like is not None else None
        self._slots: Optional[Dict[ast.AST, Tuple[ast.AST, str, int]]] = like._slots if like is not None else None
        self._mentions: Dict[str, bool] = like._mentions if like is not None else text_mentions(text)

    def nodes(self, *types: type) -> List[ast.AST]:
        """Every node of the file of these types (every node, with none), in
        source order. Rules and analyses ask this instead of `ast.walk`-ing the
        tree again: the file is indexed once, and each list is built once
        (shared: read it, never change it)."""
        by_type = self._by_type
        if by_type is None:
            by_type = self._by_type = {}
            for n in self.order:
                bucket = by_type.get(n.__class__)
                if bucket is None:
                    by_type[n.__class__] = [n]
                else:
                    bucket.append(n)
        if not types:
            every = self._memo.get("nodes.all")
            if every is None:
                every = self._memo["nodes.all"] = self.order  # type: ignore[assignment]
            return every  # type: ignore[return-value]
        if len(types) == 1:
            return by_type.get(types[0], [])
        key = ("nodes",) + types
        out = self._memo.get(key)  # type: ignore[call-overload]
        if out is None:
            wanted = set(types)
            out = [n for n in self.order if n.__class__ in wanted]
            self._memo[key] = out  # type: ignore[index]
        return out  # type: ignore[return-value]

    def nodes_of(self, *types: type) -> List[ast.AST]:
        """Every node of these types, grouped by type (not in source order):
        `nodes` without the pass that sorts them."""
        if len(types) == 1:
            return self.nodes(types[0])
        self.nodes(types[0])  # builds the buckets
        out: List[ast.AST] = []
        for t in types:
            out.extend(self._by_type.get(t, ()))  # type: ignore[union-attr]
        return out

    def mentions(self, word: str) -> bool:
        """`word` occurs in the file's text (searched once per word, not once
        per question: the text may be 10 MB)."""
        return _mentioned(self._mentions, self.text, word)

    def memo(self, namespace: str) -> Dict[object, object]:
        """A per-file dict for an analysis module's cached results."""
        return self._memo.setdefault(namespace, {})

    def forget(self) -> None:
        """Drop every memo (`FileModel.close`): analyses cache objects that
        hold the file's model, a reference cycle through this index."""
        self._memo = {}

    def memoized(self, namespace: str, key: object, compute: Callable[[], _T]) -> _T:
        """`compute()`, once per key of the namespace (a falsy answer is kept too)."""
        cache = self.memo(namespace)
        if key in cache:
            return cache[key]  # type: ignore[return-value]
        out = cache[key] = compute()
        return out

    # ------------------------------------------------------------ blocks
    def slot(self, stmt: ast.AST) -> Optional[Tuple[ast.AST, str, int]]:
        """(parent, field, index) of a statement in its parent's `body`,
        `orelse` or `finalbody` list; None for anything else. One index of
        the file answers what `any(stmt is s for s in parent.body)` would
        scan a block for (a 100,000-statement body, once per finding)."""
        slots = self._slots
        if slots is None:
            slots = self._slots = {}
            self.nodes(ast.Module)  # builds the buckets by type
            for cls, bucket in self._by_type.items():  # type: ignore[union-attr]
                # only the classes with blocks (statements, handlers, match cases)
                fields = [f for f in ("body", "orelse", "finalbody") if f in cls._fields]
                for n in bucket if fields else ():
                    for field in fields:
                        block = getattr(n, field, None)
                        if block.__class__ is list:
                            for i, b in enumerate(block):  # type: ignore[arg-type]
                                slots[b] = (n, field, i)
        return slots.get(stmt)

    def in_block(self, child: ast.AST, parent: ast.AST, *fields: str) -> bool:
        """`child` is a statement of one of `parent`'s blocks (default `body`)."""
        where = self.slot(child)
        return where is not None and where[0] is parent and where[1] in (fields or ("body",))

    def block_of(self, parent: ast.AST, child: ast.AST) -> Optional[List[ast.AST]]:
        """The `body`, `orelse` or `finalbody` list of `parent` that holds `child`."""
        where = self.slot(child)
        return getattr(parent, where[1]) if where is not None and where[0] is parent else None

    # --------------------------------------------------------- ancestors
    def ancestors(self, node: ast.AST) -> List[ast.AST]:
        """Ancestors from the module down to the node's parent."""
        out = []
        parents = self.parents
        cur = parents.get(node)
        while cur is not None:
            out.append(cur)
            cur = parents.get(cur)
        out.reverse()
        return out

    def owner(self, node: ast.AST) -> Optional[ast.AST]:
        """The def, lambda, class or module whose own code `node` is."""
        parents = self.parents
        cur = parents.get(node)
        while cur is not None and not isinstance(cur, OWNERS):
            cur = parents.get(cur)
        return cur

    @staticmethod
    def enclosing_scope(ancestors: Sequence[ast.AST]) -> Optional[ast.AST]:
        for anc in reversed(ancestors):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return anc
        return None

    @staticmethod
    def enclosing_class(ancestors: Sequence[ast.AST]) -> Optional[ast.ClassDef]:
        for anc in reversed(ancestors):
            if isinstance(anc, ast.ClassDef):
                return anc
        return None

    # ------------------------------------------------------- text facts
    @property
    def uses_cuda_graphs(self) -> bool:
        """The file captures CUDA graphs (`torch.cuda.graph`, `CUDAGraph`,
        `make_graphed_callables`, tensordict's `CudaGraphModule`, or
        `torch.compile` in a mode that uses them). A replayed graph reads and
        writes fixed addresses, so buffers such as gradients must stay
        allocated between steps."""
        return any(self.mentions(w) for w in _CUDA_GRAPH_WORDS)

    def is_cpu_script(self) -> bool:
        """The file is a program of its own (an `if __name__ == "__main__":`
        block, or a loop in its top-level code) that never names a device
        (`may_use_accelerator` of its text is False): it computes on
        the CPU, as the CPU-only examples of a repository whose other
        scripts use a GPU do. A library module without a device word may
        still run on tensors its callers moved."""
        if self.may_use_accelerator:
            return False

        def compute() -> bool:
            for stmt in self.tree.body:
                if isinstance(stmt, (ast.For, ast.While)):
                    return True
                if is_main_guard(stmt):
                    return True
            return False

        return self.memoized("index.script", "cpu_script", compute)
