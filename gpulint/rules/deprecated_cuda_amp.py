from __future__ import annotations

import ast
import re
from textwrap import dedent
from typing import Dict, List, Optional, Set, Tuple

from gpulint.model.control.amp import torch_module_alias
from gpulint.edits import statement_indent
from gpulint.rule import SAFE, TIME, Bench, Edit, Example, Fix, Rule
from gpulint.workloads import RESNET18
from gpulint.model.index.walk import walk

# the deprecated callables -> their name in torch.amp
DEPRECATED = {"torch.cuda.amp.autocast": "autocast", "torch.cuda.amp.GradScaler": "GradScaler"}
# the decorators of custom autograd functions, deprecated with them (preview
# behaviour: no first-sight evidence yet); `torch.amp`'s take `device_type="cuda"`
DEPRECATED_DECORATORS = {"torch.cuda.amp.custom_fwd": "custom_fwd", "torch.cuda.amp.custom_bwd": "custom_bwd"}
# torch.cuda.amp.autocast(enabled, dtype, cache_enabled): positional arguments
# become keywords, since torch.amp.autocast takes (device_type, dtype, enabled, ...)
AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")
# an `if` whose test names one of these guards version-dependent code: `torch.__version__`,
# `hasattr(torch.amp, ...)`, `TORCH_GE_2_4`, `_TORCH_GREATER_EQUAL_2_4`, `torch_2`,
# `is_torch_greater_or_equal(...)`; not `is_torch_tpu_available()` or `torch_dtype`,
# which test a backend or a setting, not which torch runs
COMPAT_WORD_RE = re.compile(
    r"version|torch_?\d|^_?(is_)?torch_(greater|less|ge|gt|lt|le|at_least|newer|older|2)", re.I,
)
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
# `hasattr(torch.amp, "GradScaler")`, `getattr(torch.cuda, "amp", None)`: a look-up on torch's
# own namespaces (not `getattr(self.data_collator, "collate_batch", None)`)
_TORCH_ATTR_TEST_RE = re.compile(r"\b(hasattr|getattr)\s*\(\s*[^,()]*\b(torch|amp)\b")


def _tests_version(test_text: str) -> bool:
    """The `if` test `test_text` tells old torch releases from new ones."""
    if _TORCH_ATTR_TEST_RE.search(test_text):
        return True
    for word in _WORD_RE.findall(test_text):
        if COMPAT_WORD_RE.search(word) or (word.isupper() and "TORCH" in word):
            return True
    return False
FROM_CUDA_AMP_RE = re.compile(r"torch\s*\.\s*cuda\s*\.\s*amp")
FROM_CUDA_RE = re.compile(r"(from\s+torch)\s*\.\s*cuda(\s+import)")


class DeprecatedCudaAmp(Rule):
    """
    ## What it does
    Flags calls of `torch.cuda.amp.autocast(...)` and
    `torch.cuda.amp.GradScaler(...)` in any import form (`torch.cuda.amp.autocast()`,
    `from torch.cuda.amp import autocast, GradScaler` then `autocast()`,
    `from torch.cuda import amp` then `amp.GradScaler()`, as decorators too)
    when the targeted torch release is 2.4 or newer (see the `torch-version`
    setting). Code that chooses between the old and new API (in an `except`
    handler, or under an `if` that tests the torch version or `hasattr`) is
    not flagged; a branch of a test of the backend or a setting
    (`elif is_torch_tpu_available():`, `elif device_type == "cuda":`) is no
    such choice, and its deprecated call runs on every CUDA run.

    With `--preview`, it also flags the decorators of custom autograd
    functions deprecated with them, `torch.cuda.amp.custom_fwd` and
    `custom_bwd` (bare or called, `@custom_fwd(cast_inputs=torch.float16)`),
    for `torch.amp.custom_fwd(device_type="cuda", ...)`; no fix is offered
    for them yet. This variant is preview behaviour of a stable rule: it has
    no first-sight evidence of its own.

    ## Why is this bad?
    Since PyTorch 2.4 both are deprecated aliases of the device-generic
    `torch.amp.autocast("cuda", ...)` and `torch.amp.GradScaler("cuda", ...)`:
    every call goes through a wrapper that issues a `FutureWarning` (printed
    once per call site under the default warning filters, on every call under
    `-W always` or in test runs that turn warnings into errors), and the
    aliases are slated for removal. The `torch.amp` spelling is the same
    implementation with the device spelled out.

    ## Fix safety
    Safe: the deprecated classes are thin subclasses that forward to
    `torch.amp` with `"cuda"`. The call is rewritten to the `torch.amp` spelling
    with `"cuda"` as the first argument and every keyword argument kept as it
    is. Positional arguments of `torch.cuda.amp.autocast` (`enabled`, `dtype`,
    `cache_enabled`) are turned into keywords, because `torch.amp.autocast`
    takes `(device_type, dtype, enabled, ...)`; GradScaler's positional
    arguments keep their order after `"cuda"`. Names imported with
    `from torch.cuda.amp import ...` are imported from `torch.amp` instead when
    every use of them is rewritten; otherwise the calls are spelled
    `torch.amp.<name>(...)` and the import stays. No fix is offered for a
    `GradScaler` whose class is also used otherwise in the file (an
    `isinstance` check against the old class would stop matching), for
    calls with `*args`, or inside TorchScript (`@torch.jit.script`) functions.

    ## References
    - [torch.amp: Automatic Mixed Precision package](https://pytorch.org/docs/stable/amp.html)
    - [torch.amp.autocast](https://pytorch.org/docs/stable/amp.html#torch.autocast)
    - [torch.amp.GradScaler](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    - [PyTorch 2.4 release notes (torch.cuda.amp deprecations)](https://github.com/pytorch/pytorch/releases/tag/v2.4.0)
    """

    code = "GPU401"
    preview = True  # back in preview: 83 of 92 right at first sight (docs/first-sight.json)
    name = "deprecated-cuda-amp"
    message = "`torch.cuda.amp.autocast` and `torch.cuda.amp.GradScaler` are deprecated since torch 2.4; use `torch.amp` with \"cuda\""
    _detail = "`torch.cuda.amp.{name}` is deprecated since torch 2.4; use `torch.amp.{name}(\"cuda\", ...)`"
    _alias_detail = (
        "`torch.cuda.amp.{name}` is deprecated since torch 2.4 and warns on every call;"
        " use `partial(torch.amp.{name}, \"cuda\")`"
    )
    fix_safety = SAFE
    needles = ("cuda.amp", "torch.cuda import")
    examples = (
        Example(
            bad="""
            import torch

            scaler = torch.cuda.amp.GradScaler()
            for images, targets in loader:
                optimizer.zero_grad()
                with torch.cuda.amp.autocast(dtype=torch.float16):
                    loss = criterion(model(images), targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
            good="""
            import torch

            scaler = torch.amp.GradScaler("cuda")
            for images, targets in loader:
                optimizer.zero_grad()
                with torch.amp.autocast("cuda", dtype=torch.float16):
                    loss = criterion(model(images), targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
        Example(
            title="Names imported from torch.cuda.amp",
            bad="""
            from torch.cuda.amp import GradScaler, autocast

            scaler = GradScaler(init_scale=1024, growth_interval=100)


            def train_step(model, batch, optimizer):
                with autocast(enabled=True):
                    loss = model(**batch).loss
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
            good="""
            from torch.amp import GradScaler, autocast

            scaler = GradScaler("cuda", init_scale=1024, growth_interval=100)


            def train_step(model, batch, optimizer):
                with autocast("cuda", enabled=True):
                    loss = model(**batch).loss
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            """,
        ),
        Example(
            title="Positional autocast arguments become keywords",
            bad="""
            import torch
            from torch.cuda import amp


            @torch.cuda.amp.autocast()
            def forward_loss(model, x, y):
                return model(x, y)


            scaler = amp.GradScaler(enabled=use_amp)
            with amp.autocast(use_amp, torch.bfloat16):
                loss = forward_loss(model, x, y)
            """,
            good="""
            import torch
            from torch import amp


            @torch.amp.autocast("cuda")
            def forward_loss(model, x, y):
                return model(x, y)


            scaler = amp.GradScaler("cuda", enabled=use_amp)
            with amp.autocast("cuda", enabled=use_amp, dtype=torch.bfloat16):
                loss = forward_loss(model, x, y)
            """,
        ),
    )

    bench = Bench(
        setup=dedent("""
            import torch
            from torch import nn

            """)
        + RESNET18
        + dedent("""\
            criterion = nn.CrossEntropyLoss()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
            train_batches = [
                (
                    torch.randn(batch, 3, size, size, device=DEVICE).to(memory_format=torch.channels_last),
                    torch.randint(0, classes, (batch,), device=DEVICE),
                )
                for _ in range(4)
            ]
            """),
        bad="""
        scaler = torch.cuda.amp.GradScaler()


        def run(steps):
            model.train()
            for step in range(steps):
                images, targets = train_batches[step % len(train_batches)]
                optimizer.zero_grad()
                with torch.cuda.amp.autocast(dtype=torch.float16):
                    loss = criterion(model(images), targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            return loss.detach()
        """,
        good="""
        scaler = torch.amp.GradScaler("cuda")


        def run(steps):
            model.train()
            for step in range(steps):
                images, targets = train_batches[step % len(train_batches)]
                optimizer.zero_grad()
                with torch.amp.autocast("cuda", dtype=torch.float16):
                    loss = criterion(model(images), targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            return loss.detach()
        """,
        metric=TIME,
        check="allclose",
        rtol=1e-3,
        atol=1e-4,
        note=(
            "ResNet-18-sized conv net, fp16 AMP training step on 256x3x224x224 (channels_last): the deprecated aliases"
            " forward to torch.amp, so no measurable gain is expected; same kernels, so the losses agree up to cuDNN"
            " nondeterminism (off CUDA both sides run with autocast and the scaler disabled)"
        ),
    )

    def begin_file(self, ctx) -> None:
        self._plan: Optional[Dict[int, Tuple[str, Optional[Fix]]]] = None

    _decorator_detail = (
        "`torch.cuda.amp.{name}` is deprecated since torch 2.4;"
        " use `torch.amp.{name}(device_type=\"cuda\", ...)`"
    )

    def _check(self, node: ast.AST, ctx) -> None:
        if ctx.torch_version < (2, 4):
            return
        target = node.func if isinstance(node, ast.Call) else node
        q = ctx.qualname(target) or ""
        if q in DEPRECATED_DECORATORS:
            if ctx.preview and _decorates(node, ctx) and not _Planner.in_compat_code(ctx, node):
                self.report(ctx, node, message=self._decorator_detail.format(name=DEPRECATED_DECORATORS[q]))
            return
        if q not in DEPRECATED:
            return
        if self._plan is None:
            self._plan = _Planner(ctx, self).plan()
        entry = self._plan.get(id(node))
        if entry is None:
            return
        name, fix = entry
        message = self._detail if isinstance(node, ast.Call) else self._alias_detail
        self.report(ctx, node, message=message.format(name=name), fix=fix)

    visit_Call = _check
    visit_Name = _check
    visit_Attribute = _check


def _decorates(node: ast.AST, ctx) -> bool:
    """`node` is one of a def's decorators (`@custom_bwd`, `@custom_fwd(...)`)."""
    parent = ctx.analysis.index.parents.get(node)
    return isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in parent.decorator_list


class _Planner:
    """Works out, for a whole file, which calls to flag and the edits that
    move each of them to torch.amp. Calls whose fix also rewrites a shared
    import get one combined fix (the same edits on each of them), so that the
    file is never left with an import that no longer matches its calls."""

    def __init__(self, ctx, rule: Rule) -> None:
        self.ctx = ctx
        self.rule = rule
        self.fa = ctx.analysis
        self.src = ctx.source
        self.text = ctx.source.text
        self.tree = ctx.tree
        self.torch = torch_module_alias(self.fa)
        self.bindings: Dict[str, List[ast.stmt]] = {}
        self.rebound: Set[str] = set()
        self.refs: Dict[str, List[ast.Name]] = {}
        self._scan()

    # ----------------------------------------------------------- scanning
    def _scan(self) -> None:
        for node in walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if isinstance(node, ast.Import) and not alias.asname:
                        local = alias.name.split(".")[0]
                    else:
                        local = alias.asname or alias.name
                    self.bindings.setdefault(local, []).append(node)
            elif isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    self.refs.setdefault(node.id, []).append(node)
                elif not self._class_attribute(node):
                    self.rebound.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.rebound.add(node.name)
            elif isinstance(node, ast.arg):
                self.rebound.add(node.arg)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.rebound.update(node.names)

    def _class_attribute(self, node: ast.Name) -> bool:
        """A name stored in a class body (`amp = False` as a class attribute):
        it does not shadow the module's name inside the class's methods."""
        for anc in reversed(self.fa.index.ancestors(node)):
            if isinstance(anc, ast.ClassDef):
                return True
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or isinstance(
                anc, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
            ):
                return False
        return False

    def _single_binding(self, name: str) -> Optional[ast.stmt]:
        stmts = self.bindings.get(name, [])
        if len(stmts) != 1 or name in self.rebound:
            return None
        return stmts[0]

    def _in_compat_code(self, node: ast.AST) -> bool:
        return _Planner.in_compat_code(self.ctx, node)

    @staticmethod
    def in_compat_code(ctx, node: ast.AST) -> bool:
        """Code that chooses between the old and new API: in an `except`
        handler, under an `if` that tests the torch version or `hasattr`, or
        after an `if <new torch>: return <new API>`."""
        chain = ctx.analysis.index.ancestors(node) + [node]
        for i, anc in enumerate(chain[:-1]):
            if isinstance(anc, ast.ExceptHandler):
                return True
            if isinstance(anc, (ast.If, ast.IfExp)) and chain[i + 1] is not anc.test:
                if _tests_version(ctx.source.node_text(anc.test)):
                    return True
            # the fallback after `if <new torch>: return <new API>`
            for field in ("body", "orelse", "finalbody"):
                block = getattr(anc, field, None)
                if not isinstance(block, list):
                    continue
                for stmt in block:
                    if stmt is chain[i + 1]:
                        break
                    if (
                        isinstance(stmt, ast.If)
                        and stmt.body
                        and isinstance(stmt.body[-1], (ast.Return, ast.Raise))
                        and _tests_version(ctx.source.node_text(stmt.test))
                    ):
                        return True
        return False

    def _in_torchscript(self, node: ast.AST) -> bool:
        for anc in self.fa.index.ancestors(node):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in anc.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    if (self.fa.imports.qualname(target) or "").startswith("torch.jit."):
                        return True
        return False

    # ------------------------------------------------------------- planning
    def plan(self) -> Dict[int, Tuple[str, Optional[Fix]]]:
        calls: List[Tuple[ast.Call, str]] = []
        out: Dict[int, Tuple[str, Optional[Fix]]] = {}
        for node in walk(self.tree):
            if isinstance(node, ast.Call):
                q = self.fa.imports.qualname(node.func) or ""
                if q in DEPRECATED and not self._in_compat_code(node):
                    if self._in_torchscript(node):
                        out[id(node)] = (DEPRECATED[q], None)  # TorchScript knows the cuda.amp spelling
                    else:
                        calls.append((node, DEPRECATED[q]))
        for ref, name in self._aliasing_references():
            out[id(ref)] = (name, None)
        # group by the import statement a rewrite would have to touch
        by_stmt: Dict[int, List[Tuple[ast.Call, str, str]]] = {}
        stmts: Dict[int, ast.stmt] = {}
        for call, name in calls:
            func = call.func
            if isinstance(func, ast.Name):
                stmt = self._single_binding(func.id)
                if stmt is None:
                    continue  # bound in several places (a try/except shim) or rebound: unclear
                by_stmt.setdefault(id(stmt), []).append((call, name, func.id))
                stmts[id(stmt)] = stmt
                continue
            assert isinstance(func, ast.Attribute)
            base = func.value
            if isinstance(base, ast.Name):
                stmt = self._single_binding(base.id)
                if stmt is None:
                    continue
                by_stmt.setdefault(id(stmt), []).append((call, name, base.id))
                stmts[id(stmt)] = stmt
                continue
            out[id(call)] = (name, self._fix_via_torch(call, name))
        for key, members in by_stmt.items():
            out.update(self._plan_import_group(stmts[key], members))
        return out

    def _aliasing_references(self) -> List[Tuple[ast.AST, str]]:
        """`amp_autocast = torch.cuda.amp.autocast` and
        `partial(torch.cuda.amp.autocast, ...)`: the deprecated callable is
        stored and called later, each call warning. Flagged without a fix."""
        found: List[Tuple[ast.AST, str]] = []
        for node in walk(self.tree):
            values: List[ast.AST] = []
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                values.append(node.value)
                if isinstance(node.value, ast.IfExp):
                    values += [node.value.body, node.value.orelse]
            elif isinstance(node, ast.Call) and node.args:
                if (self.fa.imports.qualname(node.func) or "") == "functools.partial":
                    values.append(node.args[0])
            for v in values:
                if not isinstance(v, (ast.Name, ast.Attribute)):
                    continue
                q = self.fa.imports.qualname(v) or ""
                if q not in DEPRECATED or self._in_compat_code(v):
                    continue
                if isinstance(v, ast.Name) and self._single_binding(v.id) is None:
                    continue
                found.append((v, DEPRECATED[q]))
        return found

    def _non_call_refs(self, name: str) -> bool:
        """Is torch.cuda.amp.<name> referred to other than by being called?"""
        target = "torch.cuda.amp." + name
        parents = self.fa.index.parents
        for node in walk(self.tree):
            if isinstance(node, (ast.Name, ast.Attribute)) and self.fa.imports.qualname(node) == target:
                parent = parents.get(node)
                if not (isinstance(parent, ast.Call) and parent.func is node):
                    return True
        return False

    def _fix_via_torch(self, call: ast.Call, name: str) -> Optional[Fix]:
        """Rewrite the callee to `<torch>.amp.<name>`, leaving imports alone."""
        if self.torch is None or (name == "GradScaler" and self._non_call_refs(name)):
            return None
        func = call.func
        args = self._argument_edits(call, name)
        if args is None:
            return None
        if isinstance(func, ast.Attribute):
            edit = self._replace(func.value, f"{self.torch}.amp")
        else:
            edit = self._replace(func, f"{self.torch}.amp.{name}")
        return self._fix(name, [edit] + args)

    def _plan_import_group(self, stmt: ast.stmt, members) -> Dict[int, Tuple[str, Optional[Fix]]]:
        out: Dict[int, Tuple[str, Optional[Fix]]] = {}
        # which local names of this statement can move to torch.amp wholesale
        movable: Dict[str, List[Edit]] = {}
        by_local: Dict[str, List[Tuple[ast.Call, str]]] = {}
        for call, name, local in members:
            by_local.setdefault(local, []).append((call, name))
        for local, items in by_local.items():
            call_ids = set()
            edits: List[Edit] = []
            ok = True
            for call, name in items:
                e = self._argument_edits(call, name)
                if e is None:
                    ok = False
                    break
                edits.extend(e)
                call_ids.add(id(call.func) if isinstance(call.func, ast.Name) else id(call.func.value))
            refs = self.refs.get(local, [])
            if ok and refs and all(id(r) in call_ids for r in refs):
                movable[local] = edits
        import_edit = self._import_edit(stmt, set(movable)) if movable else None
        if import_edit is None:
            movable = {}
        group_edits: List[Edit] = []
        if movable:
            group_edits = [import_edit] + [e for edits in movable.values() for e in edits]
        for call, name, local in members:
            if local in movable:
                out[id(call)] = (name, self._fix(name, group_edits, several=True))
            else:
                out[id(call)] = (name, self._fix_via_torch(call, name))
        return out

    # ---------------------------------------------------------------- edits
    def _fix(self, name: str, edits: List[Edit], several: bool = False) -> Fix:
        what = "the `torch.cuda.amp` imports and calls" if several else f"`torch.cuda.amp.{name}`"
        return self.rule.make_fix(f"Move {what} to `torch.amp` with \"cuda\"", edits, SAFE)

    def _replace(self, node: ast.AST, text: str) -> Edit:
        s, e = self.src.node_span(node)
        return Edit(s, e, text)

    def _argument_edits(self, call: ast.Call, name: str) -> Optional[List[Edit]]:
        """Insert "cuda" as the first argument (and, for autocast, name the positional ones)."""
        if any(isinstance(a, ast.Starred) for a in call.args):
            return None
        prefixes: List[Tuple[ast.AST, str]] = []
        if name == "autocast":
            if len(call.args) > len(AUTOCAST_POSITIONAL):
                return None
            given = {kw.arg for kw in call.keywords}
            for arg, param in zip(call.args, AUTOCAST_POSITIONAL):
                if param in given:
                    return None
                prefixes.append((arg, f"{param}="))
        if any(kw.arg in ("device", "device_type") for kw in call.keywords):
            return None
        edits: List[Edit] = []
        first = min(
            list(call.args) + list(call.keywords), key=lambda n: self.src.node_span(n)[0], default=None
        )
        if first is None:
            func_end = self.src.node_span(call.func)[1]
            paren = self.text.index("(", func_end)
            edits.append(Edit(paren + 1, paren + 1, '"cuda"'))
        else:
            start = self.src.node_span(first)[0]
            row, col = self.src.position(start)
            call_row = self.src.position(self.src.node_span(call)[0])[0]
            line_prefix = self.src.line(row)[: col - 1]
            if row != call_row and line_prefix.strip() == "":
                head = f'"cuda",\n{line_prefix}'
            else:
                head = '"cuda", '
            lead = ""
            for arg, kw in prefixes:
                if arg is first:
                    lead = kw
            edits.append(Edit(start, start, head + lead))
        for arg, kw in prefixes:
            if arg is not first:
                s = self.src.node_span(arg)[0]
                edits.append(Edit(s, s, kw))
        return edits

    def _import_edit(self, stmt: ast.stmt, moved: Set[str]) -> Optional[Edit]:
        """Rebind the moved local names to torch.amp in their import statement."""
        if isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                return None
            module = stmt.module or ""
            if module == "torch.cuda.amp":
                new_module, pattern = "torch.amp", FROM_CUDA_AMP_RE
                replace_with = "torch.amp"
            elif module == "torch.cuda":
                new_module, pattern = "torch", FROM_CUDA_RE
                replace_with = r"\1\2"
            else:
                return None
            names = [(a.name, a.asname) for a in stmt.names]
            locals_ = [asname or nm for nm, asname in names]
            if module == "torch.cuda" and any(
                nm != "amp" for (nm, _), loc in zip(names, locals_) if loc in moved
            ):
                return None
            stmt_text = self.src.node_text(stmt)
            if all(loc in moved for loc in locals_):
                new_text, n = pattern.subn(replace_with, stmt_text, count=1)
                if n != 1:
                    return None
                return self._replace(stmt, new_text)
            keep = [_render(nm, asname) for (nm, asname), loc in zip(names, locals_) if loc not in moved]
            move = [_render(nm, asname) for (nm, asname), loc in zip(names, locals_) if loc in moved]
            indent = statement_indent(self.src, stmt)
            new_text = f"from {module} import {', '.join(keep)}\n{indent}from {new_module} import {', '.join(move)}"
            return self._replace(stmt, new_text)
        if isinstance(stmt, ast.Import):
            # `import torch.cuda.amp as amp`
            entries = [(a.name, a.asname) for a in stmt.names]
            moving = [(nm, asn) for nm, asn in entries if asn in moved]
            if not moving or any(nm != "torch.cuda.amp" for nm, _ in moving):
                return None
            if len(entries) == len(moving):
                new_text, n = FROM_CUDA_AMP_RE.subn("torch.amp", self.src.node_text(stmt), count=1)
                if n != 1 or len(entries) != 1:
                    return None
                return self._replace(stmt, new_text)
            keep = [_render(nm, asn) for nm, asn in entries if (nm, asn) not in moving]
            indent = statement_indent(self.src, stmt)
            moved_text = ", ".join(_render("torch.amp", asn) for _, asn in moving)
            return self._replace(stmt, f"import {', '.join(keep)}\n{indent}import {moved_text}")
        return None


def _render(name: str, asname: Optional[str]) -> str:
    return f"{name} as {asname}" if asname else name
