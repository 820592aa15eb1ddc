"""Which torch each file's program runs on: a file runs with the packages it
imports and within the scripts that import it, so the lowest torch any of
those pins is one its code must run on (`ProjectGraph.program_facts`)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from gpulint.model.project.layers import DEFINES_MODULES, SETS_CUDNN_DETERMINISTIC

# what a program tells a file that is read without facts of its calls (no
# step starts in it): the torch it runs on, a default device set elsewhere, that
# its self-test block is not the program its code runs in, which of its
# classes other files' layers build on every call, and the defaults of the
# options another file declares that its tests compare
TOLD_ALONE = ("torch_pin", "default_device", "self_test", "per_call", "option_defaults")


class Programs:
    """The programs of a project's files (`files`: path -> (module names,
    summary); a summary's `pin` is the torch its own folders pin)."""

    def __init__(self, files: Dict[str, Tuple[Sequence[str], dict]]) -> None:
        self.files = files
        self._pins: Optional[Dict[str, List]] = None
        self._flags: Optional[Dict[str, frozenset]] = None
        self._devices: Optional[Dict[str, bool]] = None
        self._defined: Optional[frozenset] = None  # every flag a file of the project defines
        self._imports: Optional[Tuple[Dict[str, List[str]], Dict[str, List[str]]]] = None
        self._per_call: Optional[Dict[str, List[str]]] = None
        self._named_memo: Optional[Dict[str, List[str]]] = None  # (`_named`)
        self._options: Optional[Dict[str, dict]] = None  # (`option_defaults`)
        self._cudnn: Optional[Dict[str, int]] = None  # (`cudnn_free`)

    READS = ("imports", "pin", "flags", "tests_flags", "default_device", "self_test", "per_call", "cuda",
             "option_defaults", "tests_options", "cudnn")  # what it reads of a summary

    @classmethod
    def same_part(cls, before: dict, now: dict) -> bool:
        """`before` and `now` (a file's summaries) tell a `Programs` the same:
        one made with `before` answers for `now` too (a join's next round)."""
        return before is now or all(before.get(k) == now.get(k) for k in cls.READS)

    def facts(self, path: str) -> dict:
        """What `path`'s program tells its files: `torch_pin` (`pin`),
        `opt_in` (`flags`), `default_device`, `self_test`, `per_call`, `option_defaults` and
        `cudnn_free`, where there is something to tell."""
        out: dict = {}
        pin = self.pin(path)
        if pin is not None:
            out["torch_pin"] = pin
        flags = self.flags(path)
        if flags:
            out["opt_in"] = flags
        if self.default_device(path):
            out["default_device"] = True
        if self.self_tested(path):
            out["self_test"] = True
        per_call = self.per_call(path)
        if per_call:
            out["per_call"] = per_call
        defaults = self.option_defaults(path)
        if defaults:
            out["option_defaults"] = defaults
        if self.cudnn_free(path):
            out["cudnn_free"] = True
        return out

    def cudnn_free(self, path: str) -> bool:
        """No file of `path`'s programs names cuDNN work (a summary's `cudnn`,
        `layers.cudnn_words`: a convolution, a recurrent layer, a library of
        such models), and one of them defines an `nn.Module` (the models are
        in the project, not in a package it does not see), as `pin` finds the
        program: DiffRec's MLPs, OfflineRL-Kit's actors and critics. Asked
        only of a file that names `cudnn.deterministic`."""
        if not self.files[path][1].get("cudnn", 0) & SETS_CUDNN_DETERMINISTIC:
            return False  # (no other file asks: its table stays as it was)
        if self._cudnn is None:
            self._cudnn = self._over_programs(lambda p: self.files[p][1].get("cudnn", 0) & ~SETS_CUDNN_DETERMINISTIC,
                                              lambda a, b: (a or 0) | (b or 0))
        return self._cudnn.get(path) == DEFINES_MODULES

    def option_defaults(self, path: str) -> Dict[str, object]:
        """The defaults (a summary's `option_defaults`) of the options that
        the other files of `path`'s program declare and that an `if` of
        `path` compares with a constant (a summary's `tests_options`), as
        `pin` finds the program: TTSR's `option.py` declares `--num_gpu`
        with `default=1`; `trainer.py` wraps in `DataParallel` only `if
        args.num_gpu > 1`. An option declared with different defaults in
        two files of the program is left out."""
        tested = self.files[path][1].get("tests_options")
        if not tested:
            return {}
        if self._options is None:
            if not any(s.get("option_defaults") for _, s in self.files.values()):
                self._options = {}
            else:
                self._options = self._over_programs(lambda p: dict(self.files[p][1].get("option_defaults", {})),
                                                    _joined_defaults)
        found = self._options.get(path) or {}
        return {k: found[k] for k in tested if k in found and found[k] is not _CLASH}

    def per_call(self, path: str) -> List[str]:
        """The classes of `path` that the layers of a file of the project build
        on every call (a summary's `per_call`, `project.per_call`): an
        attention layer's `forward` builds `TriangularCausalMask(...)`, so the
        mask class's `__init__` runs every forward."""
        if self._per_call is None:
            self._per_call = {}
            if any(s.get("per_call") for _, s in self.files.values()):
                named = self._named()
                for _, s in self.files.values():
                    for ref in s.get("per_call", ()):
                        module, _, cls = ref.rpartition(".")
                        for p in named.get(module, ()):
                            found = self._per_call.setdefault(p, [])
                            if cls not in found:
                                found.append(cls)
        return sorted(self._per_call.get(path, ()))

    def self_tested(self, path: str) -> bool:
        """`path` has a self-test block (a summary's `self_test`: an `if
        __name__ == "__main__":` that takes no input) and other files of the
        project import it: the block checks a module that their programs run,
        so it says nothing of the device the module's code runs on (Uformer's
        `model.py` prints its model's size on the CPU; `train.py` trains it
        on the GPU)."""
        return bool(self.files[path][1].get("self_test")) and bool(self._import_graph()[1].get(path))

    def default_device(self, path: str) -> bool:
        """A file of `path`'s program (a summary's `default_device`), other
        than `path`, sets a default device that is not the CPU, as `pin`
        finds the program: `torch.set_default_tensor_type('torch.cuda.FloatTensor')`
        in NeuS's `exp_runner.py` makes the factories of the renderer it
        imports build on the GPU."""
        if self.files[path][1].get("default_device"):
            return False  # (it says so itself: `devices.default_device_set`)
        if self._devices is None:
            if not any(s.get("default_device") for _, s in self.files.values()):
                self._devices = {}
            else:
                self._devices = self._over_programs(lambda p: bool(self.files[p][1].get("default_device")),
                                                    lambda a, b: a or b)
        return bool(self._devices.get(path))

    def flags(self, path: str) -> List[str]:
        """The opt-in command-line flags (a summary's `flags`) that the other
        files of `path`'s program define and that an `if` of `path` tests (a
        summary's `tests_flags`), as `pin` finds the program: the flags of
        `params.py` guard the loop of the `train.py` that imports it."""
        summary = self.files[path][1]
        if self._defined is None:
            self._defined = frozenset(f for _, s in self.files.values() for f in s.get("flags", ()))
        tested = self._defined.intersection(summary.get("tests_flags", ())) - set(summary.get("flags", ()))
        if not tested:
            return []  # no `if` of the file tests a flag that a file of the project defines
        if self._flags is None:  # (walked only when some file tests a flag another defines)
            self._flags = self._over_programs(lambda p: frozenset(self.files[p][1].get("flags", ())),
                                              lambda a, b: a | b if a and b else a or b)
        return sorted((self._flags.get(path) or frozenset()) & tested)

    def imports_one_saying(self, path: str, key: str) -> bool:
        """A project file that `path` imports, directly or through the files
        it imports, has `key` in its summary (the transformer repository's
        `train.py` takes `device` from `conf.py`, through `from data import *`,
        and `conf.py` names CUDA)."""
        imports = self._import_graph()[0]
        seen = {path}
        todo = list(imports.get(path, ()))
        while todo:
            q = todo.pop()
            if q in seen:
                continue
            seen.add(q)
            if self.files[q][1].get(key):
                return True
            todo.extend(imports.get(q, ()))
        return False

    def pin(self, path: str) -> Optional[List]:
        """[version, file] of the lowest torch that a file of `path`'s program
        pins, where that is lower than `path`'s own pin (or `path` has none):
        the program is the files joined to it by imports, either way (what it
        imports, what imports it, what those import). A module that runs
        with a vendored package pinned to an old torch runs on that torch
        (LLaMA-Adapter's `imagebind_LLM` imports `ImageBind`, whose
        requirements pin torch 1.13.0). The summaries' `pin`, per file."""
        if self._pins is None:
            self._pins = self._program_pins()
        found = self._pins.get(path)
        own = self.files[path][1].get("pin")
        if found is None or (own is not None and tuple(own) <= tuple(found[0])):
            return None
        return found

    def _program_pins(self) -> Dict[str, List]:
        """path -> [the lowest pin of its programs, the file that has it]: of
        what it imports, through imports (the packages it runs with), and of
        what each file that imports it, through imports, imports (the
        programs it is part of: a helper module of a script that imports a
        pinned package). A file that two unrelated sub-projects share takes
        the lowest of both, as its code must run on either."""
        if not any(summary.get("pin") is not None for _, summary in self.files.values()):
            return {}  # no file pins torch: nothing to hand on

        def lower(a: Optional[List], b: Optional[List]) -> Optional[List]:
            return b if a is None or (b is not None and tuple(b[0]) < tuple(a[0])) else a

        def own(p: str) -> Optional[List]:
            pin = self.files[p][1].get("pin")
            return [list(pin), p] if pin is not None else None

        return self._over_programs(own, lower)

    def _over_programs(self, own, lower) -> dict:
        """path -> `lower` of `own` over the files of its programs (`_program_pins`);
        only the paths with something (`own` and `lower` give a false value for nothing)."""
        down: dict = {}
        up: dict = {}

        def walk(start: str, memo: Dict[str, Optional[List]], nexts, base) -> Optional[List]:
            # depth-first with an explicit stack (import chains can be long); a file met
            # again on the way (a cycle) counts with what it has so far
            if start in memo:
                return memo[start]
            memo[start] = base(start)
            stack = [(start, iter(nexts(start)))]
            while stack:
                p, it = stack[-1]
                q = next(it, None)
                if q is None:
                    stack.pop()
                    if stack:
                        parent = stack[-1][0]
                        memo[parent] = lower(memo[parent], memo[p])
                    continue
                if q in memo:
                    memo[p] = lower(memo[p], memo[q])
                    continue
                memo[q] = base(q)
                stack.append((q, iter(nexts(q))))
            return memo[start]

        imports, importers = self._import_graph()
        for p in self.files:
            walk(p, down, lambda q: imports[q], own)
        for p in self.files:
            walk(p, up, lambda q: importers.get(q, ()), lambda q: down[q])
        return {p: found for p, found in up.items() if found}

    def _import_graph(self) -> Tuple[Dict[str, List[str]], Dict[str, List[str]]]:
        """(path -> the project files it imports, path -> those that import it), made once."""
        if self._imports is None:
            named = self._named()
            parts_of = {p: p.replace("\\", "/").split("/") for p in self.files}
            imports = {p: self._importable_files(p, named, parts_of) for p in self.files}
            importers: Dict[str, List[str]] = {}
            for p, found in imports.items():
                for q in found:
                    importers.setdefault(q, []).append(p)
            self._imports = (imports, importers)
        return self._imports

    def _named(self) -> Dict[str, List[str]]:
        """module name -> the project files of that name, made once."""
        if self._named_memo is None:
            self._named_memo = {}
            for p, (names, _) in self.files.items():
                for n in names:
                    self._named_memo.setdefault(n, []).append(p)
        return self._named_memo

    def _importable_files(self, path: str, named: Dict[str, List[str]], parts_of: Dict[str, List[str]]) -> List[str]:
        """The project files `path` imports that Python could find from where
        it runs: the imported module's top package sits in `path`'s folder or
        one above it (`from ImageBind.models import m` in
        `imagebind_LLM/llama/` finds `imagebind_LLM/ImageBind/`). A module
        found elsewhere only because no other file has its name (`from
        data.data import X` in one sub-project, `data.py` in another's
        vendored package) is not one."""
        out: List[str] = []
        folder = "/".join(parts_of[path][:-1])
        for module in self.files[path][1].get("imports", ()):
            for name in (module, module.rpartition(".")[0]):
                candidates = named.get(name) if name else None
                if not candidates:
                    continue
                # of the files of that name, those Python finds from here; the nearest one
                best, best_top = None, -1
                for found in candidates:
                    parts = parts_of[found]
                    depth = name.count(".") + 1 + (parts[-1] == "__init__.py")
                    top = "/".join(parts[:-depth]) if depth < len(parts) else ""
                    if (top == "" or folder == top or folder.startswith(top + "/")) and len(top) > best_top:
                        best, best_top = found, len(top)
                if best is not None:
                    if best != path and best not in out:
                        out.append(best)
                    break
        return out


_CLASH = object()  # (an option two files of one program declare with different defaults)


def _joined_defaults(a: Optional[dict], b: Optional[dict]) -> Optional[dict]:
    if not a or not b:
        return a or b
    out = dict(a)
    for k, v in b.items():
        out[k] = v if k not in out or out[k] == v else _CLASH
    return out
