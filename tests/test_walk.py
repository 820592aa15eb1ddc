"""The fast pre-order walk must visit exactly what a plain recursive walk over
every node-holding field visits (type annotations left out on purpose), in
the same order, with the same parents."""

from __future__ import annotations

import ast
import sys
import textwrap

import pytest

from gpulint.model.index.walk import index_tree

SINGLETONS = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)


def reference(tree):
    order, parents = [], {}

    def rec(node):
        order.append(node)
        for name in node._fields:
            if name in ("annotation", "returns"):
                continue  # annotations are not indexed: no rule looks into them
            value = getattr(node, name, None)
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST) and not isinstance(child, SINGLETONS):
                    parents[child] = node
                    rec(child)

    rec(tree)
    return order, parents


SNIPPETS = [
    """
    import torch as t, os.path
    from . import x as y
    global_var: int = 1

    @decorator(arg=1)
    async def f(a, /, b: int = 2, *args, c, d=3, **kw) -> "T":
        global g
        nonlocal_ = lambda q, *r: q
        async with ctx() as (m, n):
            async for i in aiter():
                yield i
        x = {**kw, "k": [v for v in range(3) if v], 1: {s for s in "ab"}}
        y = {k: v for k, v in kw.items()}
        z = a if b else (c := d)
        w = f"{a!r:>{b}} {c}" + b"bytes".decode()
        del x[1:2:3], y
        assert a, "msg"
        try:
            raise ValueError from None
        except (TypeError, ValueError) as e:
            pass
        else:
            pass
        finally:
            return not a and -b or ~c
    """,
    """
    class C(Base, metaclass=M):
        attr: list[int] = []

        def m(self):
            while self.attr:
                self.attr.pop()
            else:
                print(*self.attr, sep="")
            x = 1 < 2 <= 3 != 4 is not None
            return x
    """,
    """
    match command:
        case ["go", direction] | ["move", direction]:
            pass
        case {"x": 1, **rest}:
            pass
        case Point(x=0, y=None) if flag:
            pass
        case [1, *others]:
            pass
        case None | True:
            pass
        case str() as s:
            pass
    """,
]
if sys.version_info >= (3, 12):
    SNIPPETS.append(
        """
        type Alias[T] = list[T]

        def g[T: int, *Ts, **P](x: T) -> T:
            return x
        """
    )


@pytest.mark.parametrize("code", SNIPPETS)
def test_index_tree_matches_a_plain_recursive_walk(code):
    tree = ast.parse(textwrap.dedent(code))
    order, parents = index_tree(tree)
    ref_order, ref_parents = reference(tree)
    assert order == ref_order
    assert parents == ref_parents
    assert len(order) > 20


@pytest.mark.parametrize("code", SNIPPETS)
def test_nodes_by_type_are_every_node_of_that_type_in_source_order(code):
    from gpulint.model.file import FileModel

    text = textwrap.dedent(code)
    tree = ast.parse(text)
    fa = FileModel(tree, text)
    order = reference(tree)[0]
    assert fa.index.nodes() == order
    for types in ((ast.Call,), (ast.Name, ast.Attribute), (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        assert fa.index.nodes(*types) == [n for n in order if isinstance(n, types)]
        if fa.index.nodes(*types):
            assert fa.index.nodes(*types) is fa.index.nodes(*types)  # built once


@pytest.mark.parametrize("code", SNIPPETS)
def test_walk_and_child_nodes_give_what_ast_gives_less_the_singletons(code):
    # the analyses' `walk` / `child_nodes` stand in for `ast.walk` /
    # `ast.iter_child_nodes`: the same nodes in the same (breadth-first) order,
    # annotations included, only the shared `ctx`/operator singletons left out
    from gpulint.model.index.walk import child_nodes, walk

    tree = ast.parse(textwrap.dedent(code))
    expected = [n for n in ast.walk(tree) if not isinstance(n, SINGLETONS)]
    got = list(walk(tree))
    assert len(got) == len(expected) > 20
    assert all(a is b for a, b in zip(got, expected))
    for node in expected:
        want = [c for c in ast.iter_child_nodes(node) if not isinstance(c, SINGLETONS)]
        have = child_nodes(node)
        assert len(have) == len(want) and all(a is b for a, b in zip(have, want))


def test_text_mentions_are_scanned_once_per_text():
    from gpulint.model.index.tree import mentions, text_mentions

    a = "x = torch.zeros(3)  # backward"
    b = "".join(["y = 1", ""])  # another text object
    assert mentions(a, "backward") and not mentions(a, "DataLoader")
    assert text_mentions(a) == {"backward": True, "DataLoader": False}
    assert not mentions(b, "backward")  # a new text starts a new memo
    assert text_mentions(b) == {"backward": False}
    assert mentions(a, "zeros") and text_mentions(a) == {"zeros": True}


@pytest.mark.parametrize("text, device", [
    ("x = x.to('mps')", True),  # (`.to(` alone says so too)
    ("backend = 'mps'", True),
    ("if hpu:\n    pass", True),
    ("xpu", True),
    ("run(npu)", True),
    ("input_ids = tokens", False),  # `npu` inside `input`
    ("use_xpu_kernels = False\ndumps(timestamps)", False),  # inside longer words
    ("mpsx = 1; ampsxpu = 2", False),
    ("é_npu = 1", False),  # a word character before it, not ASCII
])
def test_a_device_name_counts_only_as_a_word_of_its_own(text, device):
    from gpulint.model.index.tree import may_use_accelerator

    assert may_use_accelerator("".join([text])) is device  # (a fresh text object: no memo)
