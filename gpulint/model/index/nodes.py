"""The node types the layers ask about, named once."""

from __future__ import annotations

import ast

LOOPS = (ast.For, ast.While, ast.AsyncFor)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# what a node's code belongs to: a def, a lambda, a class body, or the module
OWNERS = SCOPES + (ast.Module,)
