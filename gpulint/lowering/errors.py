"""What the rewriting raises, and the Python it rewrites for."""

from __future__ import annotations

import sys
from typing import Optional, Tuple

RUNNING = sys.version_info[:2]


class NotPython(Exception):
    """Not for the rewriting: LibCST cannot parse the text (it is no Python's
    syntax), it has nothing newer than this Python's, or it is too large or
    too deeply nested to give LibCST."""


class CannotLower(Exception):
    """Valid for a newer Python, but not expressible for this one; the message
    says what (and `location`, where known)."""

    def __init__(self, message: str, location: Optional[Tuple[int, int]] = None) -> None:
        super().__init__(message)
        self.location = location
