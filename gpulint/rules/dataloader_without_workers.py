from __future__ import annotations

import ast
from textwrap import dedent
from typing import Dict, List, Optional, Set, Tuple

from gpulint.model.index.nodes import FUNCS
from gpulint.model.index.order import scope_nodes
from gpulint.model.names import last_name
from gpulint.model.values.devices import has_star_args, helper_move_target, keyword_value, move_target
from gpulint.model.values.kinds import IN_MEMORY_DATASET, NUMPY, TENSOR
from gpulint.model.values.loaders import DATALOADER_NAMES, gpu_fed_loaders, is_torch_dataloader_call, serves_stored_items
from gpulint.model.control.options import default_of_option
from gpulint.model.control.repetition import called_repeatedly
from gpulint.edits import add_keyword, find_keyword, replace_node
from gpulint.rule import TIME, UNSAFE, Bench, Edit, Example, Rule
from gpulint.workloads import LOADER_TRAIN_LOOP, RESNET_CLASSIFIER_WITH_STEM
from gpulint.model.index.walk import walk

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, ...)
NUM_WORKERS_POSITION = 5
DEFAULT_WORKERS = 4


def _refs(expr: ast.AST) -> Set[str]:
    out = {n.id for n in walk(expr) if isinstance(n, ast.Name) and n.id not in ("self", "cls")}
    out |= {"." + n.attr for n in walk(expr) if isinstance(n, ast.Attribute)}
    return out


def _has_tensor_dataset(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and last_name(n.func) == "TensorDataset" for n in walk(expr))


def _is_in_memory_dataset(fa, dataset: Optional[ast.AST]) -> bool:
    """A TensorDataset, or something built from one (`Subset`, `random_split`,
    `ConcatDataset`), followed through the names it was assigned to."""
    if dataset is None:
        return False
    if _has_tensor_dataset(dataset) or _builds_in_memory_dataset(fa, dataset):
        return True
    bindings = [(_refs(t), v) for t, v in _bindings(fa)]
    returns = _returned(fa)
    seen: Set[str] = set()
    todo = _refs(dataset)
    for _ in range(4):  # a few assignments (or returns of this file's functions) deep
        todo -= seen
        if not todo:
            return False
        seen |= todo
        nxt: Set[str] = set()
        # `dataset = TensorDataset(...)` bound to a name, or returned by a function
        # of the file the loader's dataset comes from (`load_and_cache_examples(...)`)
        found = [v for bound, v in bindings if bound & todo] + [v for n in todo for v in returns.get(n, ())]
        for value in found:
            if _has_tensor_dataset(value) or _builds_in_memory_dataset(fa, value):
                return True
            nxt |= _refs(value)
        todo = nxt
    return False


def _builds_in_memory_dataset(fa, value: ast.AST) -> bool:
    """`value` builds a dataset class of another project file whose samples
    are in memory (`self.trainset = ABSADataset(fname, tokenizer)`, its
    `__getitem__` a lookup of what its `__init__` tokenized), as the project
    says; or PyTorch Geometric's in-memory datasets: one of its own
    (`torch_geometric.datasets.PPI(root)`) or a project's subclass of
    `InMemoryDataset`, whose samples are slices of the tensors it holds."""
    if not isinstance(value, ast.Call):
        return False
    return (fa.facts.returns(value) == IN_MEMORY_DATASET
            or fa.facts.subclass_of(value) == "torch_geometric.data.InMemoryDataset"
            or (fa.imports.qualname(value.func) or "").startswith("torch_geometric.datasets."))


def _returned(fa) -> Dict[str, List[ast.AST]]:
    """The module-level functions of the file, by name: what their `return`s give."""
    def build():
        out: Dict[str, List[ast.AST]] = {}
        for func in fa.tree.body:
            if isinstance(func, FUNCS):
                out[func.name] = [n.value for n in scope_nodes(func) if isinstance(n, ast.Return) and n.value is not None]
        return out

    return fa.index.memoized("placement", "gpu202_returns", build)  # type: ignore[return-value]


def _moves_to_gpu(fa, node: ast.AST) -> bool:
    return any(move_target(fa, n) is not None or helper_move_target(fa, n) is not None for n in walk(node))


def _inference_pass(fa, move: ast.AST) -> bool:
    """The batches are moved in a function (or a script's own code, in a
    file) that trains nothing (no
    `.backward()`, no optimizer step), runs the model for inference (under
    `no_grad` / `inference_mode`, or after `.eval()`), and that this file does
    not call from a loop (an evaluation run after every epoch is). Such a
    one-off pass (predict, explain, embed, gather features after an
    experience) goes once over data that is usually in memory, where workers
    buy little and cost a process start each."""
    ancestors = fa.index.ancestors(move)
    func = next((a for a in reversed(ancestors) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is not None and called_repeatedly(fa, func):
        return False
    evals = False
    # (a script's own code runs once: Medical-Transformer's `test.py`, where nothing in the file trains)
    for n in walk(func if func is not None else fa.tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in ("backward", "step", "manual_backward"):
                return False
            if n.func.attr == "eval" and not n.args:
                evals = True
    return evals or fa.contexts.grad_disabled(ancestors)


def _local_def(fa, expr: Optional[ast.AST]) -> Optional[ast.AST]:
    """The class or function defined in this file that `expr` calls or names
    (through one assignment): `MyDataset(...)`, `collate`, `ds` with `ds = MyDataset(...)`."""
    if expr is None:
        return None
    defs = {n.name: n for n in fa.index.nodes(ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)}
    if isinstance(expr, ast.Lambda):
        return expr
    if isinstance(expr, ast.Call):
        expr = expr.func
    name = last_name(expr)
    if name in defs:
        return defs[name]
    if isinstance(expr, ast.Name):
        for target, value in _bindings(fa):
            if isinstance(target, ast.Name) and target.id == expr.id and isinstance(value, ast.Call):
                inner = last_name(value.func)
                if inner in defs:
                    return defs[inner]
    return None


def _bindings(fa) -> List[Tuple[ast.AST, ast.AST]]:
    def build():
        out = []
        for node in fa.index.nodes(ast.Assign, ast.AnnAssign):
            if isinstance(node, ast.Assign):
                out.extend((t, node.value) for t in node.targets)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                out.append((node.target, node.value))
        return out

    return fa.index.memoized("placement", "gpu202_bindings", build)  # type: ignore[return-value]


class DataloaderWithoutWorkers(Rule):
    """
    ## What it does
    Flags a `torch.utils.data.DataLoader` built with no `num_workers` (or
    `num_workers=0`) whose batches the same file moves to a GPU (`.cuda()`,
    `.to(device)`, or `.type(Tensor)` with a CUDA tensor type such as
    `torch.cuda.FloatTensor`, the idiom of older scripts).

    Not flagged: a `TensorDataset` (or a split of one, or what a function of
    the same file returns built from one: `load_and_cache_examples(...)`),
    a dataset that is itself an array or tensor (`DataLoader(windows)`, where
    the file builds `windows` with numpy, or a function of the project
    returns it: `get_sub_seqs(x)` ending in `np.array(...)`),
    or a dataset class of the project whose `__getitem__` only looks up what its
    `__init__` stored (pre-tokenized tensors), whose samples are already in memory
    (followed through the names and `self` attributes it is assigned to, and
    splits of it: `random_split`); a dataset class or `collate_fn` of the same file that
    moves samples to the GPU itself (workers could not run it); a
    `DataLoader` given `**kwargs` or a non-literal `num_workers` (it is
    configured elsewhere), unless it is a command-line option whose default
    is 0 (`num_workers=args.workers` with `--workers` declared with
    `default=0`, in the file or another file of the program; reported
    without a fix); a loader whose batches are not moved to a GPU in
    the file; test files. Nor a one-off inference pass: a loader whose batches
    are moved in a function (or the module-level code of a file) that trains nothing (no `.backward()` or
    optimizer step), runs the model under `no_grad`/`inference_mode` or after
    `.eval()`, and that the file does not call from a loop (pytorch-tabnet's
    `predict` and `explain`, features gathered once after an experience). An
    evaluation run after every epoch is still flagged.

    A loader's batches are linked to the loader as in GPU201: the loop over
    the same name in the same function, the same name (or `self` attribute)
    elsewhere in the file, or, for a loop over a parameter, the file's only
    `DataLoader(...)`. The move may also be one call away: a method of the
    same class (`self.forward_step(model, batch)`) or a function of the same
    file that the loop hands the batch to, and that moves that parameter (or
    a part of it: `ids, labels = batch` then `ids.to(device)`) to the GPU.

    ## Why is this bad?
    With `num_workers=0` the main process loads, decodes, augments and
    collates every batch itself, between training steps, while the GPU sits
    idle. Worker processes prepare the next batches in parallel with the
    training step, so the GPU is fed as soon as it is ready. For image or
    text pipelines the loading time is often longer than the step itself.

    ## Fix safety
    Unsafe: the fix sets `num_workers=4, persistent_workers=True`. Four
    workers is a moderate start that hides most per-sample loading latency
    without oversubscribing the CPUs of a shared node (tune it to the cores
    you have per GPU); persistent workers are kept between epochs instead of
    being re-forked each epoch. Worker processes change how the program runs:
    the dataset (and `collate_fn`) must be picklable on platforms that spawn
    workers (Windows, macOS), the script needs an `if __name__ == "__main__":`
    guard there, each worker has its own copy of the dataset and its own
    random state (seed NumPy/`random` in `worker_init_fn` for reproducible
    augmentation), and an `IterableDataset` must shard its stream with
    `get_worker_info()` or every worker yields the same samples.

    ## References
    - [torch.utils.data: single- and multi-process data loading](https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading)
    - [torch.utils.data.DataLoader](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    - [PyTorch performance tuning guide: enable async data loading](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-async-data-loading-and-augmentation)
    """

    code = "GPU202"
    name = "dataloader-without-workers"
    message = "`DataLoader` loads every batch in the main process while the GPU waits; set `num_workers`"
    fix_safety = UNSAFE
    needles = ("DataLoader",)
    examples = (
        Example(
            bad="""
            from torch.utils.data import DataLoader

            loader = DataLoader(train_set, batch_size=128, shuffle=True)
            for images, labels in loader:
                images, labels = images.cuda(), labels.cuda()
                loss = criterion(model(images), labels)
            """,
            good="""
            from torch.utils.data import DataLoader

            loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=4, persistent_workers=True)
            for images, labels in loader:
                images, labels = images.cuda(), labels.cuda()
                loss = criterion(model(images), labels)
            """,
        ),
    )
    bench = Bench(
        setup=dedent('''
            import numpy as np
            import torch
            import torch.nn.functional as F
            from torch import nn
            from torch.utils.data import DataLoader, Dataset


            class CroppedImages(Dataset):
                """Decoded 256x256 uint8 images in memory; each sample is center-cropped to 224,
                flipped (every other index) and normalised on the CPU, as torchvision transforms do."""

                def __init__(self, n, size, classes):
                    g = np.random.default_rng(0)
                    pad = size // 7
                    self.images = g.integers(0, 256, size=(n, size + pad, size + pad, 3), dtype=np.uint8)
                    self.labels = g.integers(0, classes, size=n)
                    self.size, self.offset = size, pad // 2
                    self.mean = np.array([123.7, 116.3, 103.5], dtype=np.float32)
                    self.std = np.array([58.4, 57.1, 57.4], dtype=np.float32)

                def __len__(self):
                    return len(self.images)

                def __getitem__(self, i):
                    o, s = self.offset, self.size
                    img = self.images[i, o : o + s, o : o + s]
                    if i % 2:
                        img = img[:, ::-1]
                    x = np.ascontiguousarray(((img - self.mean) / self.std).transpose(2, 0, 1), dtype=np.float32)
                    return torch.from_numpy(x), int(self.labels[i])


            batch_size, size, width, classes, n_images = (4, 32, 8, 10, 12) if SMALL else (128, 224, 64, 1000, 1024)
            train_set = CroppedImages(n_images, size, classes)


            ''')
        + RESNET_CLASSIFIER_WITH_STEM
        + "optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)\n",
        bad="loader = DataLoader(train_set, batch_size=batch_size, shuffle=True)\n\n\n" + LOADER_TRAIN_LOOP,
        good=(
            "loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=4, persistent_workers=True)\n\n\n"
            + LOADER_TRAIN_LOOP
        ),
        metric=TIME,
        steps=20,
        warmup=5,
        check="allclose",
        rtol=1e-4,
        atol=1e-5,
        note=(
            "ResNet-style training step on batches of 128 224x224 images that a map-style Dataset crops and normalises "
            "with numpy, loaded in the main process (bad) or by 4 persistent workers (good). The transforms are "
            "deterministic and the sampler draws from the main process either way: the same batches, so the last loss "
            "agrees up to cuDNN's run-to-run rounding (rtol 1e-4)"
        ),
    )

    def visit_Call(self, node: ast.Call, ctx) -> None:
        fa = ctx.analysis
        if last_name(node.func) not in DATALOADER_NAMES or not is_torch_dataloader_call(fa, node):
            return
        if has_star_args(node):
            return
        present, workers = keyword_value(node, "num_workers", NUM_WORKERS_POSITION)
        option = None  # `num_workers=args.workers`, an option whose default is 0
        if present and not (
            isinstance(workers, ast.Constant) and workers.value == 0 and not isinstance(workers.value, bool)
        ):
            default = default_of_option(fa.index, workers, fa.facts.option_defaults())
            if not (default == 0 and not isinstance(default, bool)):
                return
            option = ctx.source.node_text(workers)
        move = gpu_fed_loaders(fa).get(node)
        if move is None:
            return
        if _inference_pass(fa, move):
            return
        _, dataset = keyword_value(node, "dataset", 0)
        if _is_in_memory_dataset(fa, dataset) or serves_stored_items(_local_def(fa, dataset)):
            return
        if dataset is not None and fa.values.kind(dataset, list(ctx.ancestors) + [node]) in (NUMPY, TENSOR):
            return  # the dataset is an array (`DataLoader(make_windows(x))` returning one): its rows are in memory
        # a dataset or collate_fn of this file that puts samples on the GPU itself:
        # workers could not run it (CUDA cannot be used in forked workers)
        _, collate = keyword_value(node, "collate_fn", 6)
        for part in (dataset, collate):
            local = _local_def(fa, part)
            if local is not None and _moves_to_gpu(fa, local):
                return
        if option is not None:  # (no fix: the option's default is the user's to change)
            self.report(ctx, node, message=f"`DataLoader` loads every batch in the main process while the GPU "
                        f"waits: `num_workers={option}` is 0 by default; give the option a default above 0")
            return
        src = ctx.source
        edits = []
        if present:
            edits.append(replace_node(src, workers, str(DEFAULT_WORKERS)))
        else:
            edits.append(add_keyword(src, node, f"num_workers={DEFAULT_WORKERS}"))
        persistent = find_keyword(node, "persistent_workers")
        if persistent is None:
            extra = add_keyword(src, node, "persistent_workers=True")
            if not present and edits[0].start == extra.start:
                # both keywords go at the same place: one edit, in order
                first = edits.pop()
                sep = "" if extra.content.startswith(",") else ", "  # `DataLoader()`: no comma of its own
                extra = Edit(first.start, first.end, first.content + sep + extra.content)
            edits.append(extra)
        elif not (isinstance(persistent.value, ast.Constant) and persistent.value.value is True):
            edits.append(replace_node(src, persistent.value, "True"))
        fix = self.make_fix(f"Set `num_workers={DEFAULT_WORKERS}, persistent_workers=True`", edits)
        self.report(ctx, node, fix=fix)
