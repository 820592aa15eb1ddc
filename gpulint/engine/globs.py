"""Gitignore-style patterns, matched segment by segment without regular
expressions, so that no pattern can make matching slow.

The semantics are those of pathspec's `GitIgnoreSpec`, which gpulint used
before: blank lines and `#` comments do nothing, `!` negates, the last
matching pattern wins (a match of the path itself beats a match of a folder
above it), a leading or inner `/` anchors a pattern to the root, a trailing
`/` matches folders only, `**` matches any number of segments, `*` and `?`
any characters and one character within a segment, `[...]` and `[!...]`
classes, and a backslash escapes the next character. A folder is matched as
its path with a trailing `/`, and a pattern that matches a folder matches
everything below it.

Complexity: matching a path against one pattern is O(len(path) x
len(pattern)) at worst (each `*` and each `**` is placed leftmost, the
classic greedy algorithm), never exponential. `PatternSet` indexes its
patterns by a literal part (a leading path, a segment, a name's start or
end), so a path is tested only against the patterns that can match it.

Where pathspec differs from git, this follows git: a negated class never
matches `/` (pathspec's `[^a]` did), and where pathspec raises (a pattern
that ends with a lone backslash, a class with a reversed range such as
`[z-a]`) the pattern, or the range, matches nothing. Paths are taken as
gpulint builds them, with no empty segment (`a//b`) and no newline in a name.

`check`/`match` answer as pathspec does for a whole path; `check_entry`/
`match_entry` count only matches of the entry itself, as a walk (and git)
tests each entry it finds (see gpulint/engine/discovery.py).
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

# what follows the last block of segments
_OPT = 0  # `name`: the path itself, or a folder above it
_DIR = 1  # `name/`: a folder (the path's ancestor, or itself when it is a folder)
_BELOW = 2  # `name/**`: anything below `name`
# whole patterns pathspec special-cases
_ANY = 3  # `*`, `**`: every path
_ANY_BELOW = 4  # `**/*/**`: every path with a `/`
_ANY_DIR = 5  # `**/`, `*/`: every folder

_WILD = re.compile(r"[*?\[\\]")  # a character that makes a segment more than a literal
_NOT_STAR = re.compile(r"[?\[\\]")
_STAR = object()
_ONE = object()  # `?`: any one character


class _Class:
    """A bracket expression, `[a-z_]` or `[!0-9]`."""

    __slots__ = ("chars", "ranges", "negated")

    def __init__(self, chars: Set[str], ranges: List[Tuple[str, str]], negated: bool) -> None:
        self.chars = frozenset(chars)
        self.ranges = tuple(ranges)
        self.negated = negated

    def __contains__(self, ch: str) -> bool:
        hit = ch in self.chars or any(lo <= ch <= hi for lo, hi in self.ranges)
        return hit != self.negated


class _Invalid(Exception):
    """A pattern that matches nothing (pathspec drops or rejects it)."""


def _parse_class(body: str, negated: bool) -> _Class:
    """The class whose text between the brackets (less a leading `!`/`^`) is
    `body`, read as Python's `re` reads the bracket expression pathspec makes
    of it: every character literal, `a-z` a range, a `]` first a literal."""
    chars: Set[str] = set()
    ranges: List[Tuple[str, str]] = []
    text = body + "]"  # the closing bracket; a `]` elsewhere in `body` can only be first
    i, items = 0, 0
    while True:
        this = text[i]
        i += 1
        if this == "]" and items:
            break
        if text[i] == "-":
            that = text[i + 1]
            i += 2
            if that == "]":
                chars.update((this, "-"))
                break
            if this <= that:
                ranges.append((this, that))
            # else a reversed range: Python's `re` rejects it; it matches nothing here
        else:
            chars.add(this)
        items += 1
    return _Class(chars, ranges, negated)


def _parse_segment(seg: str):
    """One segment of a pattern: a literal string, or a `_Glob`."""
    if seg == "*":
        return _Glob([(_ONE,), ""])  # a whole segment: at least one character
    if not _WILD.search(seg):
        return seg
    if not _NOT_STAR.search(seg):  # stars only: the common `*.gen.py`, `test_*`
        return _Glob(seg.split("*"))
    atoms: list = []  # characters, _STAR, _ONE and _Class objects
    i, end = 0, len(seg)
    while i < end:
        m = _WILD.search(seg, i)
        if m is None:
            atoms.extend(seg[i:])
            break
        atoms.extend(seg[i: m.start()])
        ch = m.group()
        i = m.end()
        if ch == "\\":
            if i >= end:
                raise _Invalid(seg)  # nothing to escape
            atoms.append(seg[i])
            i += 1
        elif ch == "*":
            atoms.append(_STAR)
        elif ch == "?":
            atoms.append(_ONE)
        else:  # "[": a class, up to the next "]" (one right after the "[" or "[!" is literal)
            j = i
            if j < end and seg[j] in "!^":
                j += 1
            if j < end and seg[j] == "]":
                j += 1
            j = seg.find("]", j)
            if j < 0:
                raise _Invalid(seg)  # no closing bracket: git drops the pattern
            negated = seg[i] in "!^"
            atoms.append(_parse_class(seg[i + 1 if negated else i: j], negated))
            i = j + 1
    if all(a.__class__ is str for a in atoms):
        return "".join(atoms)
    return _Glob.from_atoms(atoms)


class _Glob:
    """A segment with wildcards, as the chunks between its stars (a chunk is
    a string, or a tuple of characters, `_ONE` and classes): the first chunk
    is matched at the start, the last at the end, the others leftmost."""

    __slots__ = ("first", "middle", "last", "star", "min_len", "head", "tail")

    def __init__(self, chunks: list) -> None:
        self.star = len(chunks) > 1
        self.first = chunks[0]
        self.last = chunks[-1] if self.star else ""
        self.middle = tuple(c for c in chunks[1:-1] if c)  # `**` inside a segment is `*`
        self.min_len = sum(len(c) for c in chunks)
        # literal text every match starts or ends with (for PatternSet's index)
        self.head = _literal_end(chunks[0], False)
        self.tail = _literal_end(chunks[-1], True)

    @classmethod
    def from_atoms(cls, atoms: list) -> "_Glob":
        chunks: List[list] = [[]]
        for a in atoms:
            if a is _STAR:
                chunks.append([])
            else:
                chunks[-1].append(a)
        return cls(["".join(c) if all(a.__class__ is str for a in c) else tuple(c) for c in chunks])

    def match(self, s: str) -> bool:
        n = len(s)
        if n < self.min_len:
            return False
        first = self.first
        if not self.star:
            return n == len(first) and _chunk_at(first, s, 0)
        last = self.last
        end = n - len(last)
        if not (_chunk_at(first, s, 0) and _chunk_at(last, s, end)):
            return False
        pos = len(first)
        for chunk in self.middle:
            at = _find_chunk(chunk, s, pos, end)
            if at < 0:
                return False
            pos = at + len(chunk)
        return True


def _literal_end(chunk, at_end: bool) -> str:
    """The literal characters a chunk starts (or ends) with."""
    if chunk.__class__ is str:
        return chunk
    out = []
    for a in (reversed(chunk) if at_end else chunk):
        if a.__class__ is not str:
            break
        out.append(a)
    return "".join(reversed(out) if at_end else out)


def _chunk_at(chunk, s: str, i: int) -> bool:
    if chunk.__class__ is str:
        return s.startswith(chunk, i)
    if i + len(chunk) > len(s):
        return False
    for k, a in enumerate(chunk):
        ch = s[i + k]
        if a is _ONE:
            continue
        if a.__class__ is str:
            if a != ch:
                return False
        elif ch not in a:
            return False
    return True


def _find_chunk(chunk, s: str, pos: int, end: int) -> int:
    """The leftmost place at or after `pos` where `chunk` matches and ends by `end`, or -1."""
    if chunk.__class__ is str:
        return s.find(chunk, pos, end)
    for i in range(pos, end - len(chunk) + 1):
        if _chunk_at(chunk, s, i):
            return i
    return -1


class Pattern:
    """One compiled pattern line. `include` is False for a `!` pattern."""

    __slots__ = ("text", "include", "kind", "anchored", "blocks")

    def __init__(self, text: str, include: bool, kind: int, anchored: bool = True, blocks: tuple = ()) -> None:
        self.text = text
        self.include = include
        self.kind = kind
        self.anchored = anchored
        self.blocks = blocks  # runs of segment globs, separated by inner `**`

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"

    # -- placements of the blocks over a path's segments
    def _pre_end(self, segs: Sequence[str]) -> int:
        """Where the blocks before the last end when each is placed leftmost
        (0 with one block); -1 when they do not fit."""
        blocks = self.blocks
        pos = 0
        for k in range(len(blocks) - 1):
            b = blocks[k]
            if k == 0 and self.anchored:
                if not _block_at(b, segs, 0):
                    return -1
                pos = len(b)
            else:
                at = _find_block(b, segs, pos)
                if at < 0:
                    return -1
                pos = at + len(b)
        return pos

    def _ends_at(self, segs: Sequence[str], pre: int, k: int) -> bool:
        """A placement whose last block ends exactly at segment `k`."""
        last = self.blocks[-1]
        start = k - len(last)
        if start < pre or (start != 0 and self.anchored and len(self.blocks) == 1):
            return False
        return _block_at(last, segs, start)

    def _min_end(self, segs: Sequence[str], pre: int) -> int:
        last = self.blocks[-1]
        if self.anchored and len(self.blocks) == 1:
            return len(last) if _block_at(last, segs, 0) else -1
        at = _find_block(last, segs, pre)
        return at + len(last) if at >= 0 else -1

    def priority(self, segs: Sequence[str]) -> int:
        """2: the pattern matches the path; 1: only as a folder above it (or
        through a `name/` pattern); 0: no match. pathspec's dir-marker rule."""
        kind = self.kind
        n = len(segs)
        if kind >= _ANY:
            if kind == _ANY:
                return 2 if (n > 1 or segs[0]) else 0
            return (2 if kind == _ANY_BELOW else 1) if n > 1 else 0
        pre = self._pre_end(segs)
        if pre < 0:
            return 0
        if kind == _OPT and self._ends_at(segs, pre, n):
            return 2
        end = self._min_end(segs, pre)
        if 0 <= end < n:
            return 2 if kind == _BELOW else 1
        return 0

    def own_priority(self, segs: Sequence[str], is_dir: bool) -> int:
        """As `priority` for the entry `segs` (a file, or a folder without its
        trailing `/`), counting only matches of the entry itself, never of a
        folder above it."""
        kind = self.kind
        if kind >= _ANY:
            if kind == _ANY_DIR:
                return 1 if is_dir else 0
            return self.priority(list(segs) + [""] if is_dir else segs)
        if not is_dir:
            if kind == _DIR:
                return 0
            return 2 if self.priority(segs) == 2 else 0
        full = list(segs) + [""]
        p = self.priority(full)
        if p == 2:
            return 2
        if p == 1:
            # matched as a folder: the entry itself, or a folder above it?
            pre = self._pre_end(segs)
            if pre >= 0 and self._ends_at(segs, pre, len(segs)):
                return 1
        return 0


def _block_at(block: tuple, segs: Sequence[str], s: int) -> bool:
    if s + len(block) > len(segs):
        return False
    for k, g in enumerate(block):
        seg = segs[s + k]
        if g.__class__ is str:
            if g != seg:
                return False
        elif not g.match(seg):
            return False
    return True


def _find_block(block: tuple, segs: Sequence[str], pos: int) -> int:
    """The leftmost segment at or after `pos` where `block` matches, or -1."""
    last_start = len(segs) - len(block)
    first = block[0]
    if first.__class__ is str:
        s = pos
        while s <= last_start:
            try:
                s = segs.index(first, s, last_start + 1)
            except ValueError:
                return -1
            if _block_at(block, segs, s):
                return s
            s += 1
        return -1
    for s in range(pos, last_start + 1):
        if _block_at(block, segs, s):
            return s
    return -1


def compile_pattern(line: str) -> Optional[Pattern]:
    """The pattern of one line, or None for a line that matches nothing
    (blank, a comment, `/`, or invalid)."""
    text = line
    if not line.endswith("\\ "):
        line = line.rstrip()
    if not line or line.startswith("#") or line == "/":
        return None
    include = True
    if line.startswith("!"):
        include = False
        line = line[1:]
    segs = line.split("/")
    is_dir = not segs[-1]
    if not segs[0]:
        del segs[0]  # `/name`: anchored to the root
    elif len(segs) == 1 or (len(segs) == 2 and not segs[1]):
        if segs[0] != "**":
            segs.insert(0, "**")  # `name` or `name/`: at any depth
    if not segs:
        return None
    if not segs[-1]:
        segs[-1] = "**"
    if "**" in segs:
        for i in range(len(segs) - 1, 0, -1):
            if segs[i - 1] == "**" and segs[i] == "**":
                del segs[i]
        if segs == ["**"]:
            return Pattern(text, include, _ANY_DIR if is_dir else _ANY)
        if segs == ["**", "*"]:
            return Pattern(text, include, _ANY)
        if segs == ["**", "*", "**"]:
            return Pattern(text, include, _ANY_DIR if is_dir else _ANY_BELOW)
    anchored = segs[0] != "**"
    if not anchored:
        segs = segs[1:]
    kind = _OPT
    if segs[-1] == "**":
        kind = _DIR if is_dir else _BELOW
        segs = segs[:-1]
    blocks: List[list] = [[]]
    try:
        for seg in segs:
            if seg == "**":
                blocks.append([])
            else:
                blocks[-1].append(_parse_segment(seg))
    except _Invalid:
        return None
    return Pattern(text, include, kind, anchored, tuple(tuple(b) for b in blocks))


def split_path(path: str) -> List[str]:
    """A path's segments, after pathspec's normalisation (no leading `/` or `./`)."""
    if path.startswith("/"):
        path = path[1:]
    elif path.startswith("./"):
        path = path[2:]
    return path.split("/")


class PatternSet:
    """Patterns compiled once, with an index that finds the few that can
    match a path: by the literal leading segments of an anchored pattern, by
    a literal segment, or by the literal start or end of a segment. The
    others (wholly wildcard patterns) are tried for every path."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.patterns: List[Optional[Pattern]] = [compile_pattern(line) for line in lines]
        self.negates = any(p is not None and not p.include for p in self.patterns)
        self._by_prefix: Dict[str, List[int]] = {}
        self._prefix_depths: List[int] = []
        self._by_segment: Dict[str, List[int]] = {}
        self._by_head: Dict[str, List[int]] = {}
        self._head_lens: List[int] = []
        self._by_tail: Dict[str, List[int]] = {}
        self._tail_lens: List[int] = []
        self._rest: List[int] = []
        depths, heads, tails = set(), set(), set()
        for i, p in enumerate(self.patterns):
            if p is None:
                continue
            key = _index_key(p)
            if key is None:
                self._rest.append(i)
                continue
            where, text, depth = key
            if where == "prefix":
                self._by_prefix.setdefault(text, []).append(i)
                depths.add(depth)
            elif where == "segment":
                self._by_segment.setdefault(text, []).append(i)
            elif where == "head":
                self._by_head.setdefault(text, []).append(i)
                heads.add(len(text))
            else:
                self._by_tail.setdefault(text, []).append(i)
                tails.add(len(text))
        self._prefix_depths = sorted(depths)
        self._head_lens = sorted(heads)
        self._tail_lens = sorted(tails)

    def __len__(self) -> int:
        return len(self.patterns)

    def candidates(self, segs: Sequence[str]) -> Set[int]:
        """Indices of the patterns that may match a path with these segments."""
        out: Set[int] = set(self._rest)
        if self._by_prefix:
            n = len(segs)
            for d in self._prefix_depths:
                if d > n:
                    break
                hit = self._by_prefix.get("/".join(segs[:d]))
                if hit:
                    out.update(hit)
        by_segment, by_head, by_tail = self._by_segment, self._by_head, self._by_tail
        for seg in segs:
            if by_segment:
                hit = by_segment.get(seg)
                if hit:
                    out.update(hit)
            for k in self._head_lens:
                if k > len(seg):
                    break
                hit = by_head.get(seg[:k])
                if hit:
                    out.update(hit)
            for k in self._tail_lens:
                if k > len(seg):
                    break
                hit = by_tail.get(seg[-k:])
                if hit:
                    out.update(hit)
        return out

    def _verdict(self, segs: Sequence[str], score) -> Optional[bool]:
        """pathspec's rule: the last pattern that matches the path itself
        decides, else the last that matches it as a folder; None: no match."""
        patterns = self.patterns
        best_dir: Optional[bool] = None
        for i in sorted(self.candidates(segs), reverse=True):
            p = patterns[i]
            prio = score(p)
            if prio == 2:
                return p.include  # type: ignore[union-attr]
            if prio == 1 and best_dir is None:
                best_dir = p.include  # type: ignore[union-attr]
                if not self.negates:
                    return best_dir
        return best_dir

    def check(self, path: str) -> Optional[bool]:
        """True: excluded, False: re-included by a `!` pattern, None: no
        pattern matches (pathspec's `check_file(path).include`). A folder is
        `path/`."""
        segs = split_path(path)
        return self._verdict(segs, lambda p: p.priority(segs))

    def match(self, path: str) -> bool:
        """pathspec's `match_file`."""
        return bool(self.check(path))

    def check_entry(self, path: str, is_dir: bool) -> Optional[bool]:
        """As `check` for a file or folder (no trailing `/`) that a walk
        found, counting only patterns that match it, not a folder above it
        (the walk has tested those folders already)."""
        segs = split_path(path)
        return self._verdict(segs, lambda p: p.own_priority(segs, is_dir))

    def match_entry(self, path: str, is_dir: bool) -> bool:
        return bool(self.check_entry(path, is_dir))

    def matching(self, path: str) -> List[int]:
        """Indices of the `include` patterns each of which matches the path on
        its own (per-file-ignores: every pattern is a separate rule)."""
        segs = split_path(path)
        patterns = self.patterns
        return sorted(
            i for i in self.candidates(segs) if patterns[i].include and patterns[i].priority(segs)  # type: ignore[union-attr]
        )


def _index_key(p: Pattern) -> Optional[Tuple[str, str, int]]:
    """What every path the pattern matches contains: ("prefix", "a/b", 2)
    for an anchored pattern starting with literal segments, ("segment",
    name, 0) for a literal segment anywhere, ("head"/"tail", text, 0) for
    the literal start or end of a segment glob; None for none."""
    if p.kind >= _ANY:
        return None
    blocks = p.blocks
    if p.anchored:
        lead = []
        for g in blocks[0]:
            if g.__class__ is not str:
                break
            lead.append(g)
        if lead:
            return ("prefix", "/".join(lead), len(lead))
    best: Optional[Tuple[str, str, int]] = None
    for block in blocks:
        for g in block:
            if g.__class__ is str:
                return ("segment", g, 0)
            for where, text in (("head", g.head), ("tail", g.tail)):
                if text and (best is None or len(text) > len(best[1])):
                    best = (where, text, 0)
    return best
