"""Every rule, found by walking the `gpulint.rules` package: a rule is a module
(or a package) there holding one `Rule` subclass; nothing is registered by
hand. This sits above the rules, which import the framework in
`gpulint.rule` and never this."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Dict, FrozenSet, Optional

from gpulint.rule import Rule

_REGISTRY: Optional[Dict[str, type]] = None


def all_rules() -> Dict[str, type]:
    """Every rule class, keyed by code, discovered from the gpulint.rules package."""
    global _REGISTRY
    if _REGISTRY is None:
        import gpulint.rules as pkg

        found: Dict[str, type] = {}
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for obj in vars(mod).values():
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, Rule)
                    and obj is not Rule
                    and obj.__module__ == mod.__name__
                    and obj.code
                ):
                    if obj.code in found:
                        raise RuntimeError(f"duplicate rule code {obj.code}")
                    found[obj.code] = obj
        _REGISTRY = dict(sorted(found.items()))
    return _REGISTRY


def rule_by_code_or_name(key: str) -> Optional[type]:
    rules = all_rules()
    if key.upper() in rules:
        return rules[key.upper()]
    for r in rules.values():
        if r.name == key:
            return r
    return None


def suppression_judges() -> FrozenSet[str]:
    """The codes of the rules that judge suppression comments (unused-noqa,
    `Rule.judges_suppressions`): their findings are about comments, so the
    run reads the whole project for them, code nothing reaches does not
    hide them, and only the run's own findings of them are fixed."""
    global _JUDGES
    if _JUDGES is None:  # (asked per finding where findings are dropped: found once)
        _JUDGES = frozenset(c for c, r in all_rules().items() if r.judges_suppressions)
    return _JUDGES


_JUDGES: Optional[FrozenSet[str]] = None
