"""Where the models a training file trains are built: the `nn.Module`
classes that the file and the project files it imports (a few imports
deep) build, followed through the uses of names (`main` -> `blip_decoder`
-> `BLIP_Decoder` -> `create_vit` -> `VisionTransformer`), and the layers
those classes hold (`ProjectGraph.facts_for` gives them to a file with a
training loop)."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from gpulint.model.project.imports import EVERY_NAME

# how many imports deep the models a training file can train are looked for
LAYER_IMPORT_DEPTH = 3
# how many uses deep `ModelFiles.built_layers` follows what code builds
# (a script's `main` -> `blip_decoder` -> `BLIP_Decoder` -> `create_vit` -> `VisionTransformer` -> `Block` -> `Attention`)
BUILD_DEPTH = 12


class ModelFiles:
    """Where the models a training file trains may be built, by the imports
    among the project's files (`files`: path -> (module names, summary);
    `module_file(module, importer)`: the file an import reads)."""

    def __init__(self, files: Dict[str, Tuple[Sequence[str], dict]],
                 module_file: Callable[[str, str], Optional[str]],
                 known: Optional[Tuple[Dict[str, List[str]], Optional[Dict[str, List[str]]]]] = None) -> None:
        """`known`: which project files each file imports, and the files that
        import each (None: to compute), as `known_imports` of a project whose
        files import the same modules took them (a join's next round)."""
        self.files = files
        self.module_file = module_file
        self._imports_of: Dict[str, List[str]] = dict(known[0]) if known else {}
        self._importers_of: Optional[Dict[str, List[str]]] = known[1] if known else None
        self._found: Dict[str, Tuple[Set[str], Set[str]]] = {}
        self._built: Dict[Tuple[str, bool], Dict[str, int]] = {}
        self._targets_of: Dict[Tuple[str, Optional[str]], List[Tuple[str, Optional[str]]]] = {}
        self._nodes_of: Dict[str, Dict[str, Optional[Tuple[str, Optional[str]]]]] = {}

    def known_imports(self, paths: Optional[Set[str]] = None
                      ) -> Tuple[Dict[str, List[str]], Optional[Dict[str, List[str]]]]:
        """(file -> the project files it imports, as far as read; file -> the
        files importing it, where computed): for all files, or only for
        `paths` (then without the importers), as plain data that holds
        nothing of this project."""
        if paths is None:
            return dict(self._imports_of), self._importers_of
        return {p: found for p, found in self._imports_of.items() if p in paths}, None

    def of(self, path: str, importers: bool = True) -> Set[str]:
        """The file and the project files it imports, LAYER_IMPORT_DEPTH
        imports deep, and with `importers` the files that import it with
        what they import (a trainer that is handed its model by a script
        beside it: minGPT's `Trainer`, DETR's `engine.py`). Read once per
        file: the layers, `cuda_nearby` and the engine all ask."""
        found = self._found.get(path)
        if found is None:
            own = self._closure([path])
            found = self._found[path] = (own, own | self._closure(sorted(self._importers().get(path, ()))))
        return found[1] if importers else found[0]

    def trained_layers(self, path: str, summary: dict) -> Dict[str, int]:
        """The layer counts of the models the file's loops can train: those
        its code builds (`built_layers`). Where it builds none and neither
        do the files it imports (a trainer handed its model), those that the
        files importing it build. A file that imports models but builds none
        of them (a strategy handed its model that calls a helper of a models
        package) has none: which one it trains cannot be told."""
        total = self.built_layers(path)
        if total or any(self.files[p][1].get("layers") for p in self.of(path, importers=False)):
            return total
        # the methods of the file's classes that train (`BaseModel.fit`): a subclass
        # that overrides them trains its model in a loop of its own
        trainers: Dict[str, Set[str]] = {}
        functions = summary.get("functions", {})
        for qual, fsum in functions.items():
            owner, _, method = qual.rpartition(".")
            if owner and owner not in functions and (fsum.get("steps") or fsum.get("drives")):
                trainers.setdefault(owner, set()).add(method)  # (a class's method, not a nested def)
        return self.built_layers(path, importers=True, trainers=trainers)

    def built_layers(self, path: str, importers: bool = False,
                     trainers: Optional[Dict[str, Set[str]]] = None) -> Dict[str, int]:
        """The layer counts of what the file's code builds or calls into:
        its own classes, and through the project's `uses` (`blip_decoder(...)`
        in `train.py`, `BLIP_Decoder(...)` in it, `VisionTransformer(...)` in
        that, a base class, a module read by name as in `vits.__dict__[arch]()`),
        the classes reached, BUILD_DEPTH uses deep. With `importers`, what
        the files that import it build instead; where such a file subclasses
        one of `trainers` (class -> its methods that train: TabSurvey's
        `BaseModelTorch.fit`), what the subclasses that do not override
        those methods build. A strategy handed its model that calls a helper
        of a models package counts that helper, not every model the package
        defines. A file whose uses were not read counts whole."""
        key = (path, importers)
        found = self._built.get(key)
        if found is None:
            if importers:
                starts: List[Tuple[str, Optional[str]]] = []
                for p in sorted(self._importers().get(path, ())):
                    starts += self._subclass_roots(p, trainers or {})
            else:
                starts = [(path, None)]
            found = self._built[key] = self._count(self._reach(starts))
        return found

    def _subclass_roots(self, path: str, trainers: Dict[str, Set[str]]) -> List[Tuple[str, Optional[str]]]:
        """Where what `path` builds starts: its subclasses of `trainers`
        that keep the training methods, or where it has none, all of it."""
        summary = self.files[path][1]
        functions = summary.get("functions", {})
        roots: List[Tuple[str, Optional[str]]] = []
        subclassed = False
        for cls, bases in sorted(summary.get("classes", {}).items()):
            methods = set().union(*(trainers.get(b, set()) for b in bases))
            if not methods:
                continue
            subclassed = True
            if not any(f"{cls}.{m}" in functions for m in methods):
                roots.append((path, cls.rpartition(".")[2]))
        return roots if subclassed else [(path, None)]

    def _reach(self, starts: Sequence[Tuple[str, Optional[str]]]) -> Set[Tuple[str, Optional[str]]]:
        """(file, top-level name) pairs reached from `starts` (name None: the whole file)."""
        seen: Set[Tuple[str, Optional[str]]] = set(starts)
        frontier = sorted(seen, key=lambda n: (n[0], n[1] or ""))
        for _ in range(BUILD_DEPTH):
            nxt: List[Tuple[str, Optional[str]]] = []
            for node in frontier:
                for target in self._targets(*node):
                    if target not in seen and (target[0], None) not in seen:
                        seen.add(target)
                        nxt.append(target)
            frontier = nxt
            if not frontier:
                break
        return seen

    def _targets(self, path: str, name: Optional[str]) -> List[Tuple[str, Optional[str]]]:
        """What the top-level `name` of `path` (None: all of it) uses, as (file, name) pairs (memoized)."""
        key = (path, name)
        found = self._targets_of.get(key)
        if found is None:
            found = self._targets_of[key] = self._read_targets(path, name)
        return found

    def _read_targets(self, path: str, name: Optional[str]) -> List[Tuple[str, Optional[str]]]:
        summary = self.files[path][1]
        uses = summary.get("uses")
        if not isinstance(uses, dict):  # a file read for its exports only, or its uses not read
            return [(f, None) for f in self.imported_files(path)]
        if name is None:
            wanted = [t for ts in uses.values() for t in ts]
        else:
            wanted = list(uses.get(name, ())) + list(uses.get(EVERY_NAME, ()))
        out: List[Tuple[str, Optional[str]]] = []
        nodes = self._nodes_of.setdefault(path, {})  # (the uses of a file's names repeat)
        for target in wanted:
            found = nodes[target] if target in nodes else nodes.setdefault(target, self._node_of(target, path))
            if found is not None and found not in out:
                out.append(found)
        return out

    def _node_of(self, name: str, importer: str, depth: int = 0) -> Optional[Tuple[str, Optional[str]]]:
        """The project file that defines `name` and the top-level name in it
        (`models.blip.blip_decoder`: `models/blip.py`, `blip_decoder`; a
        module: its file, None), through what packages re-export
        (`models.blip_decoder` with `from .blip import blip_decoder` in
        `models/__init__.py`)."""
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            found = self.module_file(".".join(parts[:i]), importer)
            if found is None:
                continue
            rest = parts[i:]
            if not rest:
                return found, None
            exports = self.files[found][1].get("exports") or {}
            if rest[0] in exports and depth < BUILD_DEPTH:
                target = exports[rest[0]]
                return self._node_of(".".join([target] + rest[1:]), found, depth + 1) or (found, None)
            return found, rest[0]
        return None

    def _count(self, nodes: Set[Tuple[str, Optional[str]]]) -> Dict[str, int]:
        """The layers of the classes `nodes` name, and of the whole files they
        name (or whose layers are not told per class)."""
        whole = sorted({p for p, name in nodes if name is None or "class_layers" not in self.files[p][1]})
        total: Dict[str, int] = {}
        counted = [self.files[p][1].get("layers", {}) for p in whole]
        counted += [
            self.files[p][1]["class_layers"].get(name, {})
            for p, name in sorted(n for n in nodes if n[1] is not None and n[0] not in whole)  # type: ignore[misc]
        ]
        for counts in counted:
            for k, n in counts.items():
                total[k] = total.get(k, 0) + n
        return total

    def imported_files(self, path: str) -> List[str]:
        """The project files that `path` imports (a module, or the module of an imported name)."""
        out = self._imports_of.get(path)
        if out is None:
            out = self._imports_of[path] = []
            for module in self.files[path][1].get("imports", ()):
                found = self.module_file(module, path) or self.module_file(module.rpartition(".")[0], path)
                if found is not None and found not in out:
                    out.append(found)
        return out

    def importers_of(self, path: str) -> List[str]:
        """The project files that import `path`."""
        return self._importers().get(path, [])

    def _importers(self) -> Dict[str, List[str]]:
        """file -> the project files that import it (computed once)."""
        if self._importers_of is None:
            self._importers_of = {}
            for p in self.files:
                for found in self.imported_files(p):
                    if found != p:
                        self._importers_of.setdefault(found, []).append(p)
        return self._importers_of

    def _closure(self, starts: Sequence[str]) -> Set[str]:
        """`starts` and the project files they import, LAYER_IMPORT_DEPTH imports deep."""
        seen = set(starts)
        frontier = list(starts)
        for _ in range(LAYER_IMPORT_DEPTH):
            nxt: List[str] = []
            for p in frontier:
                for f in self.imported_files(p):
                    if f not in seen:
                        seen.add(f)
                        nxt.append(f)
            frontier = nxt
            if not frontier:
                break
        return seen
