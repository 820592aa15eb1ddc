"""Shared analysis: the one place rules ask what a name is, whether code is hot,
and which values are tensors. Rules never re-implement any of this.

Everything is computed lazily on the stdlib `ast` tree and cached per file.
"""

from gpulint.analysis.core import FileAnalysis, FunctionInfo  # noqa: F401
from gpulint.analysis.names import ImportTable, dotted, last_name  # noqa: F401
