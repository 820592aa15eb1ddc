"""Prove that a change leaves every gpulint finding as it was: lint a fixed corpus at two versions and compare.

    python3 bench/same_findings.py --record base.jsonl.gz --rev HEAD   # the baseline, from a commit
    python3 bench/same_findings.py --check base.jsonl.gz               # the working tree against it
    python3 bench/same_findings.py --check base.jsonl.gz --rev main    # a commit against it
    python3 bench/same_findings.py --record base.jsonl.gz --only timm,repo    # some corpora only
    python3 bench/same_findings.py --list                              # the corpora, and what --only takes

--record lints every corpus and writes the baseline; --check lints the
corpora of a baseline again and compares. --check prints
`identical: N findings over M files in K corpora` and exits 0, or prints the
differences (the first --limit of them, 50 by default, grouped by corpus and
rule, each with the fields that changed and the source lines around it) and
exits 1. A refactor that must change no finding is checked with

    python3 bench/same_findings.py --record /tmp/base.jsonl.gz --rev HEAD
    # ... refactor ...
    python3 bench/same_findings.py --check /tmp/base.jsonl.gz

The gpulint under test is run as `python3 -m gpulint check --no-cache
--exit-zero --output-format json --select <every code> .` with PYTHONPATH set
to its checkout and the corpus as the working directory. Every code is named
(`--select ALL` leaves the rules that are off by default off); the codes are
those `python3 -m gpulint rules --output-format json` of that same version
lists. Without --rev that checkout is this working tree, whose gpulint/
package is copied to a temporary folder first (as bench/speed.py does), so
edits made while the run lasts cannot mix two versions. With --rev REV it is
a `git worktree add --detach` of REV in a temporary folder, removed afterwards.

The corpora (see --list):
  first/, second/, third/, fourth/, fifth/  the packages of bench/accuracy.py
        (PACKAGES and CORPUS_SETS), downloaded and unpacked by its fetch()
        under --corpus (default $TMPDIR/gpulint-corpus, bench/accuracy.py's
        default, so the downloads are shared)
  speed/  the packages of bench/speed.py, fetched by its fetch() (only the .py
        files) under <corpus>/_speed; the archives in
        $TMPDIR/gpulint-corpus/_downloads are reused
  repo/fixtures, repo/examples  this checkout's fixtures/ and examples/ (from
        the working tree, also with --rev, so both sides lint the same files),
        copied to a temporary folder so that no config or .gitignore of the
        repo applies
--only takes corpus names, package names (timm: first/timm-... and
speed/timm-...) and set names (second, speed, repo), comma-separated.

A finding is compared as the whole record of `--output-format json` (code,
message, location, end location, cell, noqa row, url, the fix's message,
applicability and edits), with `filename` made relative to the package's root
and that root's absolute path replaced by `<root>` in any other text. The
files that could not be checked are records too (`invalid-syntax`,
`io-error`, `internal-error`), so they are compared the same way.

The baseline is JSON lines (gzip when the name ends in .gz): a header (the
gpulint commit, whether its gpulint/ had uncommitted changes, the rule
codes), then per corpus one line (name, file count, sha256 of its files, sha256
of its findings, count) followed by its findings, sorted, one per line. A
corpus whose files changed since the baseline is named in the report, since
its differences may come from that rather than from gpulint.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
FORMAT = 1
DEFAULT_LIMIT = 50
SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")  # what gpulint's default include names: the "files" counted
SKIP_DIRS = {".gpulint_cache", "__pycache__"}  # never part of a corpus's input digest
REPO_CORPORA = ("fixtures", "examples")
ERROR_CODES = ("invalid-syntax", "io-error", "internal-error")

Records = List[dict]


# ------------------------------------------------------------------ records (pure)
def canonical(record: Mapping) -> str:
    """One record as one line of JSON, the same for the same content."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sort_key(record: Mapping) -> tuple:
    loc = record.get("location") or {}
    return (record.get("filename") or "", record.get("cell") or 0, loc.get("row") or 0, loc.get("column") or 0,
            record.get("code") or "", canonical(record))


def sort_records(records: Sequence[Mapping]) -> Records:
    return sorted((dict(r) for r in records), key=_sort_key)


def digest(records: Sequence[Mapping]) -> str:
    """sha256 of the sorted records, one canonical line each."""
    h = hashlib.sha256()
    for r in sort_records(records):
        h.update(canonical(r).encode("utf-8") + b"\n")
    return h.hexdigest()


def normalize(record: Mapping, root: str) -> dict:
    """The record with `filename` relative to root (with /) and root's absolute
    path written `<root>` anywhere else, so that two runs over copies of the
    same files in different folders compare."""
    root = os.path.abspath(root)

    def fix_text(value):
        if isinstance(value, str):
            return value.replace(root + os.sep, "<root>/").replace(root, "<root>")
        if isinstance(value, list):
            return [fix_text(v) for v in value]
        if isinstance(value, dict):
            return {k: fix_text(v) for k, v in value.items()}
        return value

    out = {k: fix_text(v) for k, v in record.items() if k != "filename"}
    name = record.get("filename")
    if isinstance(name, str) and name != "-":
        name = os.path.relpath(name, root).replace(os.sep, "/") if os.path.isabs(name) else name.replace(os.sep, "/")
    out["filename"] = name
    return out


def _flatten(value, prefix: str = "") -> Dict[str, object]:
    """{"location.row": 3, "fix.edits[0].content": "x", ...}"""
    if isinstance(value, dict):
        out: Dict[str, object] = {}
        for k in sorted(value):
            out.update(_flatten(value[k], f"{prefix}.{k}" if prefix else k))
        return out if out or not prefix else {prefix: {}}
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out if out else {prefix: []}
    return {prefix: value}


def changed_fields(old: Mapping, new: Mapping) -> List[Tuple[str, object, object]]:
    """[(field path, old value, new value)] where two records differ."""
    a, b = _flatten(dict(old)), _flatten(dict(new))
    missing = object()
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k, missing), b.get(k, missing)
        if va != vb:
            out.append((k, None if va is missing else va, None if vb is missing else vb))
    return out


@dataclass
class Difference:
    """One way a new run differs from the baseline. kind: `changed` (a finding
    of the baseline came back with other fields), `missing` (only in the
    baseline), `new` (only in the new run), `corpus-missing` / `corpus-new` (a
    whole corpus is only on one side), `codes` (the rule codes differ)."""

    corpus: str
    kind: str
    code: str = ""
    base: Optional[dict] = None
    new: Optional[dict] = None
    note: str = ""

    @property
    def record(self) -> dict:
        return self.new if self.new is not None else (self.base or {})

    def sort_key(self) -> tuple:
        r = self.record
        return (self.corpus, self.code, r.get("filename") or "", (r.get("location") or {}).get("row") or 0,
                (r.get("location") or {}).get("column") or 0, self.kind)


def _pair(removed: List[dict], added: List[dict], key: Callable[[dict], tuple]) -> Tuple[list, list, list]:
    """Pairs of a removed and an added record with the same key (in order), and the rest of each."""
    pool: Dict[tuple, List[dict]] = defaultdict(list)
    for r in added:
        pool[key(r)].append(r)
    pairs, rest_removed = [], []
    for r in removed:
        bucket = pool.get(key(r))
        if bucket:
            pairs.append((r, bucket.pop(0)))
        else:
            rest_removed.append(r)
    rest_added = [r for bucket in pool.values() for r in bucket]
    return pairs, rest_removed, sort_records(rest_added)


def compare_records(corpus: str, base: Sequence[Mapping], new: Sequence[Mapping]) -> List[Difference]:
    """The differences between two runs over one corpus: records are equal
    only when every field is; a removed and an added record of the same file
    and rule on the same row (else with the same message) are reported as one
    changed finding."""
    cb = Counter(canonical(r) for r in base)
    cn = Counter(canonical(r) for r in new)
    if cb == cn:
        return []
    removed = sort_records(json.loads(s) for s in (cb - cn).elements())
    added = sort_records(json.loads(s) for s in (cn - cb).elements())
    out: List[Difference] = []
    for key in (lambda r: (r.get("filename"), r.get("code"), r.get("cell"), (r.get("location") or {}).get("row")),
                lambda r: (r.get("filename"), r.get("code"), r.get("cell"), r.get("message"))):
        pairs, removed, added = _pair(removed, added, key)
        out += [Difference(corpus, "changed", b.get("code") or "", b, n) for b, n in pairs]
    out += [Difference(corpus, "missing", r.get("code") or "", r, None) for r in removed]
    out += [Difference(corpus, "new", r.get("code") or "", None, r) for r in added]
    return sorted(out, key=Difference.sort_key)


def compare(base: Mapping[str, Sequence[Mapping]], new: Mapping[str, Sequence[Mapping]]) -> List[Difference]:
    """Every difference between two runs: {corpus: records} each. Pure: reads
    and writes nothing."""
    out: List[Difference] = []
    for name in sorted(set(base) | set(new)):
        if name not in new:
            out.append(Difference(name, "corpus-missing", note=f"{len(base[name])} findings in the baseline, not linted now"))
        elif name not in base:
            out.append(Difference(name, "corpus-new", note=f"{len(new[name])} findings now, no baseline"))
        else:
            out += compare_records(name, base[name], new[name])
    return out


def compare_codes(base: Sequence[str], new: Sequence[str]) -> List[Difference]:
    gone, added = sorted(set(base) - set(new)), sorted(set(new) - set(base))
    if not gone and not added:
        return []
    parts = ([f"no longer: {', '.join(gone)}"] if gone else []) + ([f"new: {', '.join(added)}"] if added else [])
    return [Difference("(rules)", "codes", note="the rule codes differ; " + "; ".join(parts))]


def exit_status(differences: Sequence[Difference]) -> int:
    return 1 if differences else 0


# ------------------------------------------------------------------ the report (pure)
def _where(r: Mapping) -> str:
    loc = r.get("location") or {}
    cell = f"[cell {r['cell']}]" if r.get("cell") is not None else ""
    return f"{r.get('filename')}{cell}:{loc.get('row')}:{loc.get('column')}"


def _short(value, width: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _change(old, new, width: int = 160) -> str:
    """`old -> new`; for two long strings, the part around where they first differ."""
    if isinstance(old, str) and isinstance(new, str) and max(len(repr(old)), len(repr(new))) > width // 2:
        start = 0
        while start < min(len(old), len(new)) and old[start] == new[start]:
            start += 1
        start = max(0, start - 30)
        cut = lambda t: ("..." if start else "") + repr(t[start:start + width // 2 - 10]) + (
            "..." if len(t) > start + width // 2 - 10 else "")
        return f"{cut(old)} -> {cut(new)}"
    return f"{_short(old, width // 2)} -> {_short(new, width // 2)}"


def render_difference(d: Difference, source: Optional[Callable[[str, str, int], List[str]]] = None) -> List[str]:
    """The lines for one difference, indented; source(corpus, path, row) gives
    the numbered source lines around a row (or [])."""
    if d.kind in ("corpus-missing", "corpus-new", "codes"):
        return [f"  {d.kind}: {d.note}"]
    r = d.record
    lines = []
    if d.kind == "changed":
        lines.append(f"  changed  {_where(d.base)}  {d.code}")
        for path, old, new in changed_fields(d.base, d.new):
            lines.append(f"      {path}: {_change(old, new)}")
    else:
        side = "only in the baseline" if d.kind == "missing" else "only now"
        lines.append(f"  {side}  {_where(r)}  {d.code}: {_short(r.get('message'))}")
    if source is not None and r.get("cell") is None and r.get("filename"):
        rows = {(d.base or {}).get("location", {}).get("row"), (d.new or {}).get("location", {}).get("row")}
        for row in sorted(x for x in rows if isinstance(x, int)):
            lines += ["      " + s for s in source(d.corpus, r["filename"], row)]
    return lines


def render(differences: Sequence[Difference], limit: int = DEFAULT_LIMIT,
           source: Optional[Callable[[str, str, int], List[str]]] = None) -> str:
    """A summary of every difference by corpus and rule, then the first
    `limit` of them, grouped by corpus and rule."""
    diffs = sorted(differences, key=Difference.sort_key)
    if not diffs:
        return "no differences\n"
    corpora = sorted({d.corpus for d in diffs})
    out = [f"DIFFERENT: {len(diffs)} difference(s) in {len(corpora)} corpus(es)"]
    by = Counter((d.corpus, d.code or d.kind) for d in diffs)
    for name in corpora:
        counts = ", ".join(f"{code} x{n}" for (c, code), n in sorted(by.items()) if c == name)
        out.append(f"  {name}: {counts}")
    shown = diffs[:limit]
    out.append("")
    out.append(f"the first {len(shown)}:" if len(shown) < len(diffs) else "all of them:")
    group = None
    for d in shown:
        if (d.corpus, d.code) != group:
            group = (d.corpus, d.code)
            out.append(f"--- {d.corpus}  {d.code or d.kind}")
        out += render_difference(d, source)
    if len(diffs) > len(shown):
        out.append(f"... and {len(diffs) - len(shown)} more (--limit shows more)")
    return "\n".join(out) + "\n"


def source_lines(root: Path, rel: str, row: int, around: int = 1) -> List[str]:
    """The numbered lines row-around..row+around of root/rel, `>` at row."""
    try:
        text = (root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    lo, hi = max(1, row - around), min(len(text), row + around)
    return [f"{'>' if i == row else ' '}{i:6}| {text[i - 1]}" for i in range(lo, hi + 1)]


# ------------------------------------------------------------------ the baseline file
@dataclass
class CorpusResult:
    name: str
    files: int
    input_sha256: str
    records: Records
    seconds: float = 0.0

    @property
    def sha256(self) -> str:
        return digest(self.records)


@dataclass
class Baseline:
    header: dict
    corpora: Dict[str, CorpusResult] = field(default_factory=dict)

    @property
    def findings(self) -> Dict[str, Records]:
        return {n: c.records for n, c in self.corpora.items()}


def write_baseline(path: str, baseline: Baseline) -> None:
    lines = [canonical(dict(baseline.header, kind="header", format=FORMAT))]
    for name in sorted(baseline.corpora):
        c = baseline.corpora[name]
        records = sort_records(c.records)
        lines.append(canonical({"kind": "corpus", "name": name, "files": c.files, "findings": len(records),
                                "errors": sum(1 for r in records if r.get("code") in ERROR_CODES),
                                "input_sha256": c.input_sha256, "sha256": digest(records)}))
        lines += [canonical(r) for r in records]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    tmp = path + ".partial"
    if path.endswith(".gz"):
        with gzip.open(tmp, "wb", compresslevel=6) as fh:
            fh.write(data)
    else:
        Path(tmp).write_bytes(data)
    os.replace(tmp, path)


def read_baseline(path: str) -> Baseline:
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    baseline: Optional[Baseline] = None
    current: Optional[CorpusResult] = None
    expected: Dict[str, dict] = {}
    for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        obj = json.loads(line)
        if baseline is None:
            if obj.get("kind") != "header" or obj.get("format") != FORMAT:
                raise SystemExit(f"{path}: not a baseline of this script (format {FORMAT})")
            baseline = Baseline(header={k: v for k, v in obj.items() if k not in ("kind", "format")})
        elif obj.get("kind") == "corpus" and set(obj) >= {"name", "sha256", "input_sha256"}:
            current = CorpusResult(obj["name"], obj.get("files", 0), obj["input_sha256"], [])
            baseline.corpora[current.name] = current
            expected[current.name] = obj
        elif current is None:
            raise SystemExit(f"{path}:{n}: a finding before any corpus line")
        else:
            current.records.append(obj)
    if baseline is None:
        raise SystemExit(f"{path}: empty")
    for name, meta in expected.items():
        if digest(baseline.corpora[name].records) != meta["sha256"]:
            raise SystemExit(f"{path}: the findings of {name} do not match their sha256: the file is damaged")
    return baseline


# ------------------------------------------------------------------ corpora
@dataclass
class Corpus:
    name: str  # "first/timm-1.0.31", "speed/timm-1.0.31", "repo/fixtures"
    group: str  # first, second, ..., speed, repo
    package: str  # the package (or folder) name
    version: str = ""


def all_corpora() -> List[Corpus]:
    sys.path.insert(0, str(BENCH))
    import accuracy
    import speed

    out = [Corpus(f"first/{n}-{v}", "first", n, v) for n, v in accuracy.PACKAGES]
    for group in accuracy.CORPUS_SETS:  # second, third, fourth, fifth
        out += [Corpus(f"{group}/{n}-{v}", group, n, v) for n, v in accuracy.CORPUS_SETS[group]]
    out += [Corpus(f"speed/{n}-{v}", "speed", n, v) for n, v in speed.PACKAGES]
    out += [Corpus(f"repo/{d}", "repo", d) for d in REPO_CORPORA]
    return out


def select_corpora(corpora: Sequence[Corpus], only: Optional[str]) -> List[Corpus]:
    """The corpora --only names (corpus, package or set names); all for None."""
    if not only:
        return list(corpora)
    names = [s.strip() for s in only.split(",") if s.strip()]
    known = {c.name for c in corpora} | {c.package for c in corpora} | {c.group for c in corpora}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"--only: unknown {', '.join(unknown)} (python3 bench/same_findings.py --list)")
    return [c for c in corpora if c.name in names or c.package in names or c.group in names]


def fetch_corpora(corpora: Sequence[Corpus], corpus_dir: Path, scratch: Path) -> Dict[str, Path]:
    """{corpus name: its root}, downloading and unpacking what is missing with
    bench/accuracy.py's and bench/speed.py's own fetch()."""
    sys.path.insert(0, str(BENCH))
    import accuracy
    import speed

    roots: Dict[str, Path] = {}
    wanted = defaultdict(list)
    for c in corpora:
        wanted[c.group].append(c)
    accuracy_packages = [(c.package, c.version) for g, cs in wanted.items() if g not in ("speed", "repo") for c in cs]
    if accuracy_packages:
        saved = accuracy.PACKAGES
        accuracy.PACKAGES = list(dict.fromkeys(accuracy_packages))  # fetch() reads the module's list
        try:
            got = accuracy.fetch(corpus_dir)
        finally:
            accuracy.PACKAGES = saved
        for g, cs in wanted.items():
            if g not in ("speed", "repo"):
                roots.update({c.name: got[c.package] for c in cs})
    if wanted.get("speed"):
        got = speed.fetch(corpus_dir / "_speed", [(c.package, c.version) for c in wanted["speed"]])
        roots.update({c.name: got[c.package] for c in wanted["speed"]})
    for c in wanted.get("repo", []):
        dest = scratch / "repo" / c.package
        shutil.copytree(ROOT / c.package, dest, ignore=shutil.ignore_patterns(*SKIP_DIRS, "*.pyc"))
        roots[c.name] = dest
    return roots


def describe_input(root: Path) -> Tuple[int, str]:
    """(how many .py/.pyi/.ipynb files, sha256 of every file's path and bytes) under root."""
    h = hashlib.sha256()
    files = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            try:
                data = p.read_bytes()
            except OSError:
                data = b"<unreadable>"
            h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(data).digest())
            files += name.endswith(SOURCE_SUFFIXES)
    return files, h.hexdigest()


# ------------------------------------------------------------------ the gpulint under test
def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def gpulint_version(rev: Optional[str], scratch: Path) -> Iterator[Tuple[Path, dict]]:
    """(the folder to put on PYTHONPATH, what it is) for gpulint at rev, or this working tree."""
    if rev is None:
        sys.path.insert(0, str(BENCH))
        import speed

        dest = scratch / "gpulint-src"
        source_sha1 = speed.snapshot_gpulint(dest)
        dirty = bool(_git("status", "--porcelain", "--", "gpulint"))
        yield dest, {"commit": _git("rev-parse", "HEAD"), "rev": None, "dirty": dirty, "source_sha1": source_sha1}
        return
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    dest = scratch / f"worktree-{commit[:12]}"
    _git("worktree", "add", "--detach", "--quiet", str(dest), commit)
    try:
        yield dest, {"commit": commit, "rev": rev, "dirty": False}
    finally:
        try:
            _git("worktree", "remove", "--force", str(dest))
        except subprocess.CalledProcessError as exc:
            print(f"warning: git worktree remove {dest}: {exc.stderr.strip()}", file=sys.stderr)


def _env(pythonpath: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULINT_")}
    env.update(GPULINT_NO_CACHE="1", NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(pythonpath), os.environ.get("PYTHONPATH")])))
    return env


def rule_codes(pythonpath: Path) -> List[str]:
    res = subprocess.run([sys.executable, "-m", "gpulint", "rules", "--output-format", "json"],
                         env=_env(pythonpath), cwd=str(pythonpath), capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"gpulint rules failed: {res.stderr[-2000:]}")
    return sorted(r["code"] for r in json.loads(res.stdout))


def lint(pythonpath: Path, root: Path, codes: Sequence[str], jobs: Optional[int]) -> Records:
    """Every record of `gpulint check` over root, normalized and sorted."""
    cmd = [sys.executable, "-m", "gpulint", "check", "--no-cache", "--exit-zero", "--output-format", "json",
           "--select", ",".join(codes)]
    if jobs:
        cmd += ["-j", str(jobs)]
    res = subprocess.run(cmd + ["."], cwd=str(root), env=_env(pythonpath), capture_output=True, text=True)
    if res.returncode != 0 or not res.stdout.strip():
        raise SystemExit(f"gpulint failed on {root} (exit {res.returncode}): {res.stderr[-2000:]}")
    return sort_records(normalize(r, str(root)) for r in json.loads(res.stdout))


def run_all(pythonpath: Path, corpora: Sequence[Corpus], roots: Mapping[str, Path], codes: Sequence[str],
            jobs: Optional[int]) -> Dict[str, CorpusResult]:
    out = {}
    for i, c in enumerate(corpora, 1):
        root = roots[c.name]
        t0 = time.perf_counter()
        records = lint(pythonpath, root, codes, jobs)
        files, input_sha = describe_input(root)
        out[c.name] = CorpusResult(c.name, files, input_sha, records, time.perf_counter() - t0)
        print(f"[{i}/{len(corpora)}] {c.name}: {len(records)} findings, {files} files, "
              f"{out[c.name].seconds:.1f} s", file=sys.stderr, flush=True)
    return out


# ------------------------------------------------------------------ main
def _totals(results: Mapping[str, CorpusResult]) -> Tuple[int, int, int]:
    return sum(len(c.records) for c in results.values()), sum(c.files for c in results.values()), len(results)


def _version_line(info: Mapping) -> str:
    s = f"gpulint {info.get('commit', '?')[:12]}"
    if info.get("rev"):
        s += f" (--rev {info['rev']})"
    elif info.get("dirty"):
        s += f" + uncommitted changes to gpulint/ (source sha1 {info.get('source_sha1')})"
    return s


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", metavar="FILE", help="lint every corpus and write the baseline to FILE")
    mode.add_argument("--check", metavar="FILE", help="lint the corpora of the baseline FILE again and compare")
    mode.add_argument("--list", action="store_true", help="list the corpora and exit")
    ap.add_argument("--rev", help="lint with gpulint as of this git commit (default: this working tree)")
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "gpulint-corpus"),
                    help="where downloads are kept (default: $TMPDIR/gpulint-corpus, as bench/accuracy.py)")
    ap.add_argument("--only", help="comma-separated corpus, package or set names (see --list)")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="gpulint's -j (default: its own, one per core)")
    ap.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="how many differences to show (default 50)")
    args = ap.parse_args(argv)

    corpora = all_corpora()
    if args.list:
        for c in corpora:
            print(c.name)
        return 0
    if args.check:
        base = read_baseline(args.check)
        unknown = sorted(set(base.corpora) - {c.name for c in corpora})  # reported as missing, unless --only
        corpora = [c for c in corpora if c.name in base.corpora]
    corpora = select_corpora(corpora, args.only)
    if not corpora:
        raise SystemExit("no corpus selected")

    t0 = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="gpulint-same-findings-"))
    try:
        roots = fetch_corpora(corpora, Path(args.corpus), scratch)
        t_fetch = time.perf_counter() - t0
        with gpulint_version(args.rev, scratch) as (pythonpath, info):
            codes = rule_codes(pythonpath)
            print(f"{_version_line(info)}: {len(codes)} rules, {len(corpora)} corpora", file=sys.stderr)
            t1 = time.perf_counter()
            results = run_all(pythonpath, corpora, roots, codes, args.jobs)
            t_lint = time.perf_counter() - t1
        n, m, k = _totals(results)
        timing = f"(lint {t_lint:.1f} s, total {time.perf_counter() - t0:.1f} s, fetch {t_fetch:.1f} s)"
        if args.record:
            header = {"gpulint": info, "codes": codes, "corpus_names": [c.name for c in corpora],
                      "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "python": sys.version.split()[0]}
            write_baseline(args.record, Baseline(header, results))
            errors = sum(1 for c in results.values() for r in c.records if r.get("code") in ERROR_CODES)
            print(f"recorded: {n} findings ({errors} files that could not be checked) over {m} files in {k} corpora"
                  f" from {_version_line(info)} -> {args.record} {timing}")
            return 0

        # --check
        wanted = {c.name for c in corpora}
        base_findings = {name: c.records for name, c in base.corpora.items()
                         if name in wanted or (name in unknown and not args.only)}
        differences = compare_codes(base.header.get("codes", []), codes)
        differences += compare(base_findings, {name: c.records for name, c in results.items()})
        changed_input = [name for name, c in results.items() if c.input_sha256 != base.corpora[name].input_sha256]
        print(f"baseline: {_version_line(base.header.get('gpulint', {}))}; now: {_version_line(info)}")
        for name in changed_input:
            print(f"note: the files of {name} are not those of the baseline: its differences may come from that")
        if not differences:
            print(f"identical: {n} findings over {m} files in {k} corpora {timing}")
            return 0

        def source(corpus: str, rel: str, row: int) -> List[str]:
            return source_lines(roots[corpus], rel, row) if corpus in roots else []

        print(render(differences, args.limit, source), end="")
        print(timing)
        return exit_status(differences)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
