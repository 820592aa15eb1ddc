"""What the model knows about code outside the function it reads.

A call runs a function that may be in this file or another, and a function
runs whenever its callers do. The layers of the model ask these questions
through a `CallFacts`; the project layer (`gpulint.model.project`) answers
them from the call graph and the summaries of every function of the
project. This default knows nothing, so a file read on its own is read as
if its calls were opaque.

Every question takes a node of the file being read; an answer of None or
False means "not known", never "known not to".
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Tuple

TRAIN = "train"  # a function that runs every step of a training loop
EVAL = "eval"  # ... of a loop that iterates data without a training step


class CallFacts:
    """The questions, and the answers of a model that sees only one function."""

    # True when every answer is the default's ("not known")
    empty = True

    def bind(self, model: object) -> None:
        """Called once by the file's model, with itself, before any question."""

    def unbind(self) -> None:
        """Called by the file's model when it is done (`FileModel.close`):
        forget it, so that no reference cycle keeps it alive."""

    def steps(self, call: ast.Call) -> bool:
        """Each call runs one training step: `.backward()` or an optimizer
        step, in the callee or in a function it calls, not inside a loop of
        its own (`loss_scaler(loss, optimizer)`, `trainer.train_step(batch)`)."""
        return False

    def drives(self, call: ast.Call) -> bool:
        """The callee runs a hot loop of its own (directly or through the
        functions it calls): `train_one_epoch(...)`. A loop around such a
        call is an epoch loop, not a step loop."""
        return False

    def returns(self, call: ast.Call) -> Optional[str]:
        """The kind of value the callee returns (`gpulint.model.values.kinds`),
        where every return of it agrees."""
        return None

    def returns_items(self, call: ast.Call) -> Optional[List[Optional[str]]]:
        """Where every return of the callee gives a tuple of one length with
        Python numbers at some places (`return loss.item(), tb_dict,
        disp_dict`): the kind at each place (NUMBER, or None: not known)."""
        return None

    def host_built(self, call: ast.Call) -> bool:
        """The callee returns a tensor it computed on the host from a CPU
        factory, and nothing else (`create_sin_embedding(n, d)`: `torch.arange`,
        arithmetic, `torch.cat`; `values.host_built`)."""
        return False

    def returns_synced(self, call: ast.Call) -> bool:
        """Every return of the callee reads device values on the host
        (`return clip_grad_norm_(...).item()`, `return out.cpu().numpy()`):
        when the call returns, the host has waited for all the work queued
        before it."""
        return False

    def hands_back_moved(self, call: ast.Call) -> bool:
        """The callee returns each element of what it is handed, moved to an
        accelerator (`to_cuda(*args)` returning `[x.cuda() for x in args]`)."""
        return False

    def returns_evaluated(self, call: ast.Call) -> bool:
        """Every return of the callee gives a model it switched to eval mode
        (`model.eval()` then `return model`: weak-to-strong's `get_model`)."""
        return False

    def any_returns_evaluated(self) -> bool:
        """Some call of the file is one `returns_evaluated` says so of."""
        return False

    def forwards(self, call: ast.Call) -> bool:
        """The callee is a method of a model of the project that runs the
        model itself (`self(x)`, `self.forward(x)`) with autograd as its caller
        has it, and no backward or optimizer step: a forward of the model."""
        return False

    def moved_returns(self, call: ast.Call) -> Tuple[int, ...]:
        """The positions of what the callee returns that it put on an
        accelerator: -1 for the whole value, i for element i of a tuple
        (`model, tokenizer = init_model(cfg, device)`, whose `return
        model.to(device), tokenizer` gives (0,))."""
        return ()

    def any_host_built(self) -> bool:
        """Some call of the file is `host_built`."""
        return False

    def iterated_argument(self, call: ast.Call) -> Optional[ast.AST]:
        """The argument a generator yields the elements of: `loader` in
        `metric_logger.log_every(loader, 10)`, whose body is
        `for obj in iterable: ... yield obj`."""
        return None

    def option_defaults(self) -> Dict[str, object]:
        """The defaults of command-line options that other files of the
        file's program declare and that its `if` tests compare
        (`Programs.option_defaults`)."""
        return {}

    def project_uses_accelerator(self) -> bool:
        """Some file of the project can put a tensor on an accelerator (CUDA,
        a device, `.to(...)`, a library that moves tensors). False only when
        the project read as a whole has none: then it computes on the CPU."""
        return True

    def parameter_kind(self, func: ast.AST, name: str) -> Optional[str]:
        """The kind of value every call of `func` in the project passes for
        its parameter `name`, where all agree and it lives on the host
        (`gpulint.model.values.kinds.HOST_KINDS`; for `**kwargs`,
        `HOST_MAPPING`): `metric_logger.update(loss=loss.item())`."""
        return None

    def model_layers(self) -> Optional[Dict[str, int]]:
        """What the `nn.Module` classes of this file and the project's classes
        its code builds build: {"conv": n, "matmul": n, "attention": n,
        "transformer": n} (see `project.layers.class_layer_counts` and
        `project.models.ModelFiles.built_layers`); None where it has none."""
        return None

    def cudnn_free(self) -> bool:
        """No file of this file's programs names a convolution, a recurrent
        layer or a library of such models, and the models it builds are in
        the project (`project.programs.Programs.cudnn_free`): cuDNN runs
        nothing of it."""
        return False

    def cuda_nearby(self) -> bool:
        """The file does not name CUDA, but a file where the models its
        training loops train are built, or one that imports it, does (DETR's
        `engine.py`, whose device `main.py` chooses)."""
        return False

    def called_in_low_precision(self) -> bool:
        """A file that names a reduced precision (a bf16 model, autocast,
        TF32) calls a function of this file: it chooses the precision that
        this file's code runs in (picotron's `train.py` casts the model,
        then calls the pipeline step of another file)."""
        return False

    def device_side(self, func: ast.AST) -> bool:
        """The function is in a file that never mentions a device, and a
        function of a file that can use one calls it, directly or through
        calls: what it computes may be on the device that file chose."""
        return False

    def every_step(self, func: ast.AST) -> Optional[str]:
        """TRAIN or EVAL when the function runs on every step of such a loop:
        it is called from the every-step part of one, or from a function that
        runs every step, in this file or another."""
        return None

    def called_off_step(self, func: ast.AST) -> bool:
        """Other functions of the project call the function, and none on
        every step of a loop (TensoRF's `updateAlphaMask`, called at the
        iterations of a schedule): its name says nothing of how often it runs."""
        return False

    def feeds_env(self, func: ast.AST) -> bool:
        """The function runs every step, and every per-step call of it hands
        what it returns to an environment's step (`action =
        self.explore(state)` then `env.step(action)`): its return value is
        the action the host needs."""
        return False

    def evaluated_parameter(self, func: ast.AST, name: str) -> bool:
        """Every call of the function that the project makes (in any file)
        hands, for its parameter `name`, a model its caller switched to eval
        mode (`model.eval()` then `evaluate(model, data)`)."""
        return False

    def entered_grad_off(self, func: ast.AST) -> bool:
        """Every call of the function that the project makes runs with
        autograd off (under `with torch.no_grad():`, or in a function that
        only runs so), in this file or another."""
        return False

    def entered_synced(self, func: ast.AST) -> bool:
        """Every call of the function from a loop's step, or from a function
        that runs every step, comes right after a host read or an explicit
        sync of its caller, with no model work queued between
        (`loss_value = loss.item()` then `all_reduce_mean(loss_value)`): at
        the top of its body the host has just waited for the GPU."""
        return False

    def default_device(self) -> bool:
        """A file of the file's program sets a default device that is not
        the CPU (`torch.set_default_tensor_type("torch.cuda.FloatTensor")` in
        the script that imports it): its factories build there."""
        return False

    def self_test(self) -> bool:
        """The file's `if __name__ == "__main__":` block takes no input, and
        other files of the project import the file: the block is the
        module's self-test, and the module's code runs in their programs, on
        the device they choose (not a CPU script, `TreeIndex.is_cpu_script`)."""
        return False

    def subclass_of(self, call: ast.Call) -> Optional[str]:
        """The framework class (`torch.nn.DataParallel`, `torch.utils.data.DataLoader`)
        a class of the project that the call builds subclasses (sync_batchnorm's
        `DataParallelWithCallback`, a `DataLoader` that sets its own `collate_fn`)."""
        return None

    def built_per_call(self, cls: ast.AST) -> bool:
        """The layers of a file of the project build objects of the class on
        every call (`Programs.per_call`: `TriangularCausalMask(...)` in an
        attention layer's `forward`): its `__init__` runs every forward."""
        return False

    def opt_in_flags(self) -> FrozenSet[str]:
        """The command-line flags, off by default, that other files of the
        file's program define for logging, debugging or saving
        (`control.options.opt_in_destinations`: `--log-logit-mean` in
        `params.py`, read as `args.log_logit_mean` in `train.py`)."""
        return frozenset()


NO_FACTS = CallFacts()


class ProgramFacts(CallFacts):
    """No answer about calls, only what the file's program says of it: a
    file read without the project's call facts (nothing in it starts a
    step) whose program sets a default device elsewhere, imports it past
    its self-test block, builds its classes in every call of a layer, or
    declares the options it compares."""

    def __init__(self, told: dict) -> None:
        """`told`: what the program tells the file (`programs.TOLD_ALONE`)."""
        self.told = told

    def default_device(self) -> bool:
        return bool(self.told.get("default_device"))

    def self_test(self) -> bool:
        return bool(self.told.get("self_test"))

    def built_per_call(self, cls: ast.AST) -> bool:
        return getattr(cls, "name", None) in self.told.get("per_call", ())

    def option_defaults(self) -> Dict[str, object]:
        return self.told.get("option_defaults") or {}
