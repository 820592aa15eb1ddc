"""Speed of gpulint on real PyTorch code, next to Ruff, TorchFix and Fixit.

    python bench/speed.py                                  # gpulint + Ruff over the six pinned packages
    python bench/speed.py --tools gpulint,ruff,torchfix,fixit --subset accelerate
    python bench/speed.py --packages accelerate --tools gpulint,ruff --reps 1   # a quick smoke run
    python bench/speed.py --write-doc --json speed.json    # regenerate docs/performance.md's table
    python bench/speed.py --check                          # exit 1 when a target is missed

The corpus is the .py files of six pinned PyPI releases (PACKAGES), fetched
with `pip download --no-deps` (a wheel; an sdist only where there is no wheel).
Nothing is installed, no code from them is run, and nothing is copied into this
repo: only the .py files are unpacked under --corpus (default
$TMPDIR/gpulint-speed-corpus/<name>-<version>/). Archives already downloaded by
bench/accuracy.py ($TMPDIR/gpulint-corpus/_downloads) are reused.

Every tool runs in this same invocation, on the same files, one after another:

  gpulint   this checkout (PYTHONPATH=repo root), every rule on by default with
            --preview (while no rule is stable, a plain check selects none and
            only parses): `python -m gpulint check --preview --exit-zero -q
            --output-format concise`
  ruff      `ruff check --isolated --no-cache --select ALL --exit-zero -q --output-format concise`
            (the `ruff` on PATH, or --ruff)
  torchfix  TorchFix's standalone CLI, `torchfix <dirs>` with its default rules,
            pip-installed into <corpus>/_venv-torchfix
  fixit     `fixit lint <dirs>` with its default config, which enables Fixit's
            built-in rules (`fixit.rules`); pip-installed into <corpus>/_venv-fixit

TorchFix and Fixit are slow (around twenty minutes each over the whole corpus
on two cores), so they are off unless named in --tools, run --slow-reps times
(default 1) and only over --subset (default: every selected package). Each row
of the table says how many runs its median is of and which packages it covers,
and each comparison with gpulint uses a gpulint run over the same packages.

Measurements, per run:
  wall      time.perf_counter() around the process, from outside it; the table
            shows the median (and min-max) of the runs
  peak RSS  the largest sum of the RSS of the process and all its descendants,
            polled with psutil every 20-100 ms; without psutil, the largest
            single process's ru_maxrss from wait4() (not a sum: the table says so)
  CPU       user+system seconds of the process and its descendants (wait4);
            CPU/wall is the number of cores kept busy
  findings  diagnostic lines in the tool's output

gpulint scenarios: cold (`--no-cache`, default jobs), warm (a run with the
cache on fills <cwd>/.gpulint_cache, then each timed run finds nothing
changed), one file changed (a comment appended to one mid-sized file that
mentions torch, restored afterwards), `-j 1` against `-j 2`, and scaling (time
per 100k lines over the first 1, 2, 4 and 6 packages in PACKAGES' order).
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

try:
    import psutil  # optional: peak RSS of the whole process tree
except ImportError:  # pragma: no cover - depends on the environment
    psutil = None

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
MARK_START, MARK_END = "<!-- speed:start -->", "<!-- speed:end -->"

# In the order the scaling sets grow: each set is the first N of these.
PACKAGES = [
    ("accelerate", "1.15.0"),
    ("timm", "1.0.31"),
    ("torchvision", "0.29.1"),
    ("lightning", "2.6.6"),
    ("diffusers", "0.42.1"),
    ("transformers", "5.24.0"),
]
SCALING_SIZES = (1, 2, 4, 6)
ALL_TOOLS = ("gpulint", "ruff", "torchfix", "fixit")
ALL_SCENARIOS = ("cold", "warm", "changed", "jobs", "scaling")
VENV_PACKAGES = {"torchfix": "torchfix", "fixit": "fixit"}  # pip requirement per tool venv
CACHE_DIR = ".gpulint_cache"

# targets from the issue
MEMORY_TARGET_BYTES = 1024 ** 3
WARM_TARGET_S = 1.0
CHANGED_EXTRA_S = 0.5
TORCHFIX_FACTOR = 5.0
JOBS_SPEEDUP_TARGET = 1.7
CORES_USED_FRACTION = 0.75  # ours: "default: all cores" counts as met at CPU/wall >= 0.75 x cores

# A diagnostic line in each tool's concise output.
FINDING_RE = {
    "gpulint": re.compile(r"^.+:\d+:\d+: [A-Z]+\d+ "),
    "ruff": re.compile(r"^.+:\d+:\d+: \S+"),
    "torchfix": re.compile(r"^.+:\d+:\d+: TOR\d+ "),
    "fixit": re.compile(r"^.+@\d+:\d+ \w+: "),
}


# ------------------------------------------------------------------ pure helpers
def select_packages(spec: Optional[str], known: Sequence[Tuple[str, str]] = PACKAGES) -> List[Tuple[str, str]]:
    """The packages named in a comma-separated spec (names, or a number N for
    the first N), kept in `known`'s order; all of them for an empty spec."""
    if not spec:
        return list(known)
    spec = spec.strip()
    if spec.isdigit():
        n = int(spec)
        if not 1 <= n <= len(known):
            raise ValueError(f"--packages/--subset: {n} is not between 1 and {len(known)}")
        return list(known[:n])
    names = [s.strip().lower() for s in spec.split(",") if s.strip()]
    by_name = dict(known)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown package(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [(n, v) for n, v in known if n in names]


def parse_list(spec: str, allowed: Sequence[str], what: str) -> List[str]:
    items = [s.strip().lower() for s in spec.split(",") if s.strip()]
    bad = [s for s in items if s not in allowed]
    if bad:
        raise ValueError(f"unknown {what} {', '.join(bad)}; choose from {', '.join(allowed)}")
    return [a for a in allowed if a in items]


def scaling_sets(packages: Sequence[Tuple[str, str]], sizes: Iterable[int] = SCALING_SIZES) -> List[Tuple[str, ...]]:
    """The cumulative package sets for the scaling table: the first n selected
    packages for each n in sizes that fits (and all of them, if that is not one)."""
    names = tuple(n for n, _ in packages)
    out = [names[:n] for n in sizes if n <= len(names)]
    if names and names not in out:
        out.append(names)
    return out


def count_findings(lines: Iterable[str], tool: str) -> int:
    pat = FINDING_RE[tool]
    return sum(1 for line in lines if pat.match(line))


def count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


# prints the time to lint one file (argv[1]) with the settings the CLI would use, in seconds
FILE_TIME_SCRIPT = """
import statistics, sys, time
from gpulint.engine.config import ConfigResolver
from gpulint.engine.files import lint_file
from gpulint.engine.runner import options_for
path = sys.argv[1]
options = options_for(ConfigResolver().for_path(path), path)
result = lint_file(path, options)
assert result.error is None, result.error
times = []
for _ in range(7):
    t = time.perf_counter()
    lint_file(path, options)
    times.append(time.perf_counter() - t)
print(statistics.median(times))
"""


def pick_changed_file(files: Sequence[Tuple[str, int, bool]]) -> str:
    """The file for the one-file-changed run: of the files that mention torch
    (else all), the one at the median line count (ties by path). files holds
    (path, lines, mentions_torch)."""
    pool = [f for f in files if f[2]] or list(files)
    if not pool:
        raise ValueError("no files to pick from")
    pool = sorted(pool, key=lambda f: (f[1], f[0]))
    return pool[len(pool) // 2][0]


def human_bytes(n: Optional[int]) -> str:
    if n is None:
        return "n/a"
    if n >= 1024 ** 3:
        return f"{n / 1024 ** 3:.2f} GiB"
    return f"{n / 1024 ** 2:.0f} MiB"


def replace_between_markers(doc: str, text: str, start: str = MARK_START, end: str = MARK_END) -> str:
    if start not in doc or end not in doc or doc.index(start) > doc.index(end):
        raise ValueError(f"the document has no {start} ... {end} section")
    head = doc[: doc.index(start) + len(start)]
    tail = doc[doc.index(end):]
    return head + "\n" + text.rstrip("\n") + "\n" + tail


def summarise(runs: List[dict]) -> dict:
    """Median and spread of a list of single-run measurements."""
    walls = [r["wall"] for r in runs]
    rss = [r["peak_rss"] for r in runs if r.get("peak_rss") is not None]
    single = [r["max_single_rss"] for r in runs if r.get("max_single_rss") is not None]
    cpus = [r["cpu"] for r in runs]
    return {
        "reps": len(runs),
        "wall": median(walls),
        "wall_min": min(walls),
        "wall_max": max(walls),
        "walls": walls,
        "peak_rss": max(rss) if rss else None,
        "max_single_rss": max(single) if single else None,
        "cpu": median(cpus),
        "cores_used": median(cpus) / median(walls) if median(walls) > 0 else None,
        "findings": runs[-1]["findings"],
    }


def check_targets(res: dict) -> List[str]:
    """'target missed' lines for what was measured (a target whose inputs were
    not measured is neither met nor missed)."""
    problems = []
    rows = {(r["tool"], r["scenario"], tuple(r["packages"])): r for r in res.get("rows", [])}
    allp = tuple(res.get("packages", []))
    cold = rows.get(("gpulint", "cold", allp))
    ruff = rows.get(("ruff", "cold", allp))
    if cold and ruff and cold["wall"] > ruff["wall"]:
        problems.append(f"cold run {cold['wall']:.2f} s > Ruff --select ALL {ruff['wall']:.2f} s")
    for r in res.get("rows", []):
        if r["tool"] == "torchfix":
            g = rows.get(("gpulint", "cold", tuple(r["packages"])))
            if g and g["wall"] * TORCHFIX_FACTOR > r["wall"]:
                problems.append(
                    f"only {r['wall'] / g['wall']:.1f}x faster than TorchFix on {'+'.join(r['packages'])}"
                    f" (target {TORCHFIX_FACTOR:g}x)")
    warm = rows.get(("gpulint", "warm", allp))
    if warm and warm["wall"] > WARM_TARGET_S:
        problems.append(f"warm run {warm['wall']:.2f} s > {WARM_TARGET_S:g} s")
    changed = rows.get(("gpulint", "one file changed", allp))
    if changed and changed.get("file_time") is not None:
        limit = CHANGED_EXTRA_S + changed["file_time"]
        if changed["wall"] > limit:
            problems.append(f"one file changed {changed['wall']:.2f} s > {CHANGED_EXTRA_S:g} s + that file's"
                            f" {changed['file_time']:.2f} s")
    for r in res.get("rows", []):
        if r["tool"] == "gpulint" and r.get("peak_rss") is not None and r["peak_rss"] > MEMORY_TARGET_BYTES:
            problems.append(f"gpulint {r['scenario']} on {'+'.join(r['packages'])}: peak memory"
                            f" {human_bytes(r['peak_rss'])} > 1 GiB")
    sp = res.get("jobs_speedup")
    if sp is not None and sp < JOBS_SPEEDUP_TARGET:
        problems.append(f"-j 2 is only {sp:.2f}x faster than -j 1 (target {JOBS_SPEEDUP_TARGET:g}x)")
    cores = res.get("machine", {}).get("cores")
    if cold and cores and cold.get("cores_used") is not None and cores > 1:
        if cold["cores_used"] < CORES_USED_FRACTION * cores:
            problems.append(f"default jobs kept {cold['cores_used']:.2f} of {cores} cores busy"
                            f" (< {CORES_USED_FRACTION:g} x cores, our reading of \"default: all\")")
    return problems


# ------------------------------------------------------------------ corpus
def _download_dirs(corpus: Path) -> List[Path]:
    dirs = [corpus / "_downloads", Path(tempfile.gettempdir()) / "gpulint-corpus" / "_downloads"]
    return [d for d in dirs if d.is_dir()]


def _find_archive(dirs: Sequence[Path], name: str, version: str) -> Optional[Path]:
    prefix = f"{name.replace('-', '_')}-{version}-".lower()
    sdist = f"{name}-{version}.tar.gz".lower()
    wheels, sdists = [], []
    for d in dirs:
        for p in sorted(d.iterdir()):
            low = p.name.lower()
            # a local version (torch-2.13.0+cpu-...) is the same release
            if (low.startswith(prefix) or low.startswith(prefix[:-1] + "+")) and low.endswith(".whl"):
                wheels.append(p)
            elif low in (sdist, sdist.replace(name, name.replace("-", "_"))):
                sdists.append(p)
    # prefer a pure-Python wheel, then the CPython 3.11 manylinux one, then any
    wheels.sort(key=lambda p: (0 if "-none-any" in p.name else 1 if "cp311" in p.name else 2, p.name))
    return (wheels or sdists or [None])[0]


def fetch(corpus: Path, packages: Sequence[Tuple[str, str]]) -> Dict[str, Path]:
    """{package: unpacked tree of its .py files}, downloading what is missing."""
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "_downloads").mkdir(exist_ok=True)
    out = {}
    for name, version in packages:
        dest = corpus / f"{name}-{version}"
        if not dest.exists():
            archive = _find_archive(_download_dirs(corpus), name, version)
            if archive is None:
                print(f"downloading {name}=={version} ...", file=sys.stderr)
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(corpus / "_downloads")]
                res = subprocess.run(cmd + ["--only-binary", ":all:", f"{name}=={version}"])
                if res.returncode != 0 and name == "torchvision":  # a platform wheel: any one will do
                    res = subprocess.run(cmd + ["--only-binary", ":all:", "--python-version", "3.11",
                                                "--platform", "manylinux_2_28_x86_64", f"{name}=={version}"])
                if res.returncode != 0:  # no wheel: the sdist
                    subprocess.run(cmd + ["--no-binary", ":all:", f"{name}=={version}"], check=True)
                archive = _find_archive(_download_dirs(corpus), name, version)
                if archive is None:
                    raise SystemExit(f"pip downloaded nothing usable for {name}=={version}")
            tmp = corpus / f".{name}-{version}.partial"
            shutil.rmtree(tmp, ignore_errors=True)
            _unpack_py(archive, tmp)
            tmp.rename(dest)
        out[name] = dest
    return out


def _unpack_py(archive: Path, dest: Path) -> None:
    """Only the .py files, and never outside dest."""
    dest.mkdir(parents=True)
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if info.filename.endswith(".py") and not info.is_dir():
                    _write_member(dest, info.filename, z.read(info))
    else:
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.endswith(".py"):
                    parts = m.name.split("/", 1)  # strip the sdist's top folder
                    f = t.extractfile(m)
                    if f is not None and len(parts) == 2:
                        _write_member(dest, parts[1], f.read())


def _write_member(dest: Path, name: str, data: bytes) -> None:
    target = (dest / name).resolve()
    if not str(target).startswith(str(dest.resolve()) + os.sep):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def corpus_stats(sources: Dict[str, Path]) -> Dict[str, dict]:
    out = {}
    for name, src in sources.items():
        files = []
        for p in sorted(src.rglob("*.py")):
            if CACHE_DIR in p.parts:
                continue
            data = p.read_bytes()
            files.append((str(p), count_lines(data), b"torch" in data))
        out[name] = {"files": len(files), "lines": sum(f[1] for f in files),
                     "torch_files": sum(1 for f in files if f[2]), "file_list": files}
    return out


# ------------------------------------------------------------------ the gpulint under test
def snapshot_gpulint(dest: Path) -> str:
    """Copy this checkout's gpulint package to dest/gpulint, so that edits made
    to the checkout while the benchmark runs do not mix versions within one run
    (and do not invalidate the cache between the warm runs). Returns a short
    hash of the copied sources."""
    shutil.copytree(ROOT / "gpulint", dest / "gpulint", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    h = hashlib.sha1()
    for p in sorted((dest / "gpulint").rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(dest)).encode() + b"\0" + p.read_bytes())
    # byte-compiled, as `pip install` leaves an installed package: every run then reads the
    # .pyc files, also where PYTHONDONTWRITEBYTECODE is set (no run would write them, and each
    # would compile all of gpulint again, about 0.45 s on a 2-core machine)
    compileall.compile_dir(str(dest / "gpulint"), quiet=1)
    return h.hexdigest()[:12]


# ------------------------------------------------------------------ running and measuring
class Poller(threading.Thread):
    """Polls the summed RSS of a process and all its descendants."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            proc = psutil.Process(self.pid)
        except psutil.Error:
            return
        start = time.perf_counter()
        while not self.stop.is_set():
            total = 0
            try:
                procs = [proc] + proc.children(recursive=True)
            except psutil.Error:
                break
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            # finer at first (short runs), coarser later (less overhead)
            self.stop.wait(0.02 if time.perf_counter() - start < 2 else 0.1)


def measure(cmd: Sequence[str], cwd: Path, env: dict, tool: str, keep_output: Optional[Path] = None) -> dict:
    """Run cmd once; wall time, peak RSS, CPU time and findings."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(list(cmd), cwd=str(cwd), env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        poller = None
        if psutil is not None:
            poller = Poller(p.pid)
            poller.start()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if poller is not None:
            poller.stop.set()
            poller.join()
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
        err.seek(0)
        errtext = err.read().decode("utf-8", "replace")
    if keep_output is not None:
        keep_output.write_text(text, encoding="utf-8")
    ok_codes = (0, 1) if tool == "fixit" else (0,)
    if p.returncode not in ok_codes:
        raise RuntimeError(f"{tool} exited {p.returncode}: {' '.join(cmd)}\n{errtext[-3000:]}")
    return {
        "wall": wall,
        "peak_rss": poller.peak if poller is not None and poller.peak else None,
        "max_single_rss": ru.ru_maxrss * 1024,  # Linux: KiB
        "cpu": ru.ru_utime + ru.ru_stime,
        "findings": count_findings(text.splitlines(), tool),
        "stderr_tail": errtext[-500:],
    }


class Bench:
    def __init__(self, args, sources: Dict[str, Path], stats: Dict[str, dict], snapshot_dir: Optional[Path] = None):
        self.args = args
        self.corpus = Path(args.corpus).resolve()
        self.sources = sources
        self.stats = stats
        self.rows: List[dict] = []
        self.memo: Dict[tuple, dict] = {}
        self.env = {k: v for k, v in os.environ.items() if k != "GPULINT_NO_CACHE"}
        self.env["NO_COLOR"] = "1"
        self.gpulint_src = snapshot_dir or ROOT
        self.src_hash: Optional[str] = None
        self.gpulint_env = dict(self.env, PYTHONPATH=os.pathsep.join(
            filter(None, [str(self.gpulint_src), os.environ.get("PYTHONPATH")])))

    # commands
    def dirs(self, pkgs: Sequence[str]) -> List[str]:
        return [self.sources[n].name for n in pkgs]  # relative to the corpus dir (the cwd)

    def gpulint_cmd(self, pkgs, cache: bool, jobs: Optional[int] = None, paths=None) -> List[str]:
        cmd = [sys.executable, "-m", "gpulint", "check", "--preview", "--exit-zero", "-q", "--output-format", "concise"]
        if not cache:
            cmd.append("--no-cache")
        if jobs is not None:
            cmd += ["-j", str(jobs)]
        return cmd + (list(paths) if paths is not None else self.dirs(pkgs))

    def tool_cmd(self, tool: str, pkgs) -> List[str]:
        if tool == "ruff":
            return [self.args.ruff, "check", "--isolated", "--no-cache", "--select", "ALL", "--exit-zero", "-q",
                    "--output-format", "concise", *self.dirs(pkgs)]
        if tool == "torchfix":
            return [str(self.venv_bin("torchfix", "torchfix")), *self.dirs(pkgs)]
        if tool == "fixit":
            return [str(self.venv_bin("fixit", "fixit")), "lint", *self.dirs(pkgs)]
        raise ValueError(tool)

    def venv_bin(self, tool: str, exe: str) -> Path:
        venv = self.corpus / f"_venv-{tool}"
        exe_path = venv / "bin" / exe
        if not exe_path.exists():
            print(f"installing {VENV_PACKAGES[tool]} into {venv} ...", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", VENV_PACKAGES[tool]],
                           check=True)
        return exe_path

    def clear_cache(self) -> None:
        for d in list(self.corpus.rglob(CACHE_DIR)):
            if d.is_dir():
                shutil.rmtree(d)

    # rows
    def add_row(self, tool: str, scenario: str, pkgs: Sequence[str], runs: List[dict], **extra) -> dict:
        s = summarise(runs)
        files = sum(self.stats[n]["files"] for n in pkgs)
        lines = sum(self.stats[n]["lines"] for n in pkgs)
        row = dict(tool=tool, scenario=scenario, packages=list(pkgs), files=files, lines=lines, **s, **extra)
        row["files_per_s"] = files / s["wall"] if s["wall"] else None
        row["s_per_100k_lines"] = s["wall"] / lines * 1e5 if lines else None
        self.rows.append(row)
        print(f"  {tool} {scenario} [{'+'.join(pkgs)}]: {s['wall']:.2f} s median of {s['reps']}"
              f" ({', '.join(f'{w:.2f}' for w in s['walls'])}), peak {human_bytes(s['peak_rss'])},"
              f" CPU/wall {s['cores_used'] or 0:.2f}, {s['findings']} findings", file=sys.stderr)
        return row

    def repeat(self, cmd, tool: str, reps: int, before=None, after=None) -> List[dict]:
        runs = []
        for _ in range(reps):
            if before:
                before()
            try:
                runs.append(measure(cmd, self.corpus, self.gpulint_env if tool == "gpulint" else self.env, tool))
            finally:
                if after:
                    after()
        return runs

    def gpulint_cold(self, pkgs: Tuple[str, ...], jobs: Optional[int] = None, scenario: str = "cold") -> dict:
        key = ("gpulint", pkgs, jobs)
        if key not in self.memo:
            self.clear_cache()
            runs = self.repeat(self.gpulint_cmd(pkgs, cache=False, jobs=jobs), "gpulint", self.args.reps)
            self.memo[key] = self.add_row("gpulint", scenario, pkgs, runs, jobs=jobs or "default")
        return self.memo[key]

    def run_all(self, tools: List[str], scenarios: List[str], subset: Tuple[str, ...]) -> dict:
        allp = tuple(self.sources)
        res: dict = {"packages": list(allp)}
        if "gpulint" in tools:
            # untimed: a first run, so that the first timed one does not read gpulint and the corpus cold from disk
            some = [self.stats[allp[0]]["file_list"][0][0]]
            measure(self.gpulint_cmd((), cache=False, jobs=1, paths=some), self.corpus, self.gpulint_env, "gpulint")
            if "cold" in scenarios:
                self.gpulint_cold(allp)
            if "warm" in scenarios or "changed" in scenarios:
                self.clear_cache()
                fill = measure(self.gpulint_cmd(allp, cache=True), self.corpus, self.gpulint_env, "gpulint")
                caches = sorted(str(p.relative_to(self.corpus)) for p in self.corpus.rglob(CACHE_DIR))
                res["cache_fill"] = {"wall": fill["wall"], "cache_dirs": caches}
                print(f"  gpulint cache fill: {fill['wall']:.2f} s, cache at {caches}", file=sys.stderr)
                if "warm" in scenarios:
                    runs = self.repeat(self.gpulint_cmd(allp, cache=True), "gpulint", self.args.reps)
                    self.add_row("gpulint", "warm", allp, runs, jobs="default")
                if "changed" in scenarios:
                    self.one_file_changed(allp, res)
                self.clear_cache()
        for tool in tools:
            if tool == "gpulint":
                continue
            pkgs = allp if tool == "ruff" else subset
            reps = self.args.reps if tool == "ruff" else self.args.slow_reps
            runs = self.repeat(self.tool_cmd(tool, pkgs), tool, reps)
            self.add_row(tool, "cold", pkgs, runs)
            if "gpulint" in tools and tool in ("torchfix", "fixit"):
                self.gpulint_cold(pkgs)  # the same files, for the comparison
        if "gpulint" in tools and "jobs" in scenarios:
            j1 = self.gpulint_cold(allp, jobs=1, scenario="cold -j 1")
            j2 = self.gpulint_cold(allp, jobs=2, scenario="cold -j 2")
            res["jobs_speedup"] = j1["wall"] / j2["wall"]
        if "gpulint" in tools and "scaling" in scenarios:
            res["scaling"] = []
            for pkgs in scaling_sets([(n, "") for n in allp]):
                row = self.gpulint_cold(pkgs)
                res["scaling"].append({k: row[k] for k in ("packages", "files", "lines", "wall", "reps",
                                                           "s_per_100k_lines", "peak_rss")})
        res["rows"] = self.rows
        return res

    def one_file_changed(self, allp: Tuple[str, ...], res: dict) -> None:
        files = [f for n in allp for f in self.stats[n]["file_list"]]
        path = Path(pick_changed_file(files))
        original = path.read_bytes()
        st = path.stat()
        counter = [0]

        def change():
            counter[0] += 1
            path.write_bytes(original + f"\n# gpulint speed bench: changed {counter[0]}\n".encode())

        def restore():
            path.write_bytes(original)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            # re-warm, untimed, so that the next timed run again sees one change
            measure(self.gpulint_cmd(allp, cache=True), self.corpus, self.gpulint_env, "gpulint")

        runs = self.repeat(self.gpulint_cmd(allp, cache=True), "gpulint", self.args.reps, before=change,
                           after=restore)
        # that file's own time: linting it in a process that has gpulint loaded (the median of 7 runs
        # after one untimed run): what the changed run spends on it beyond the warm run's bookkeeping
        out = subprocess.run([sys.executable, "-c", FILE_TIME_SCRIPT, str(path)], capture_output=True, text=True,
                             env=self.gpulint_env, cwd=self.corpus, check=True).stdout
        file_time = float(out.strip().splitlines()[-1])
        rel = str(path.relative_to(self.corpus))
        lines = count_lines(original)
        self.add_row("gpulint", "one file changed", allp, runs, jobs="default", changed_file=rel,
                     changed_file_lines=lines, file_time=file_time)
        print(f"  changed file {rel} ({lines} lines): its own time {file_time:.3f} s", file=sys.stderr)


# ------------------------------------------------------------------ machine and versions
def machine() -> dict:
    info = {"cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
        info["cpu"] = m.group(1).strip() if m else platform.processor()
    except OSError:
        info["cpu"] = platform.processor()
    try:
        m = re.search(r"^MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
        info["memory"] = int(m.group(1)) * 1024 if m else None
    except OSError:
        info["memory"] = None
    info["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    info["loadavg_start"] = os.getloadavg()
    info["psutil"] = psutil.__version__ if psutil is not None else None
    return info


def _first_line(cmd: Sequence[str], env=None) -> str:
    try:
        res = subprocess.run(list(cmd), capture_output=True, text=True, env=env, timeout=120)
        return (res.stdout.strip() or res.stderr.strip()).splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unknown"


def tool_versions(bench: Bench, tools: List[str]) -> dict:
    v = {}
    if "gpulint" in tools:
        v["gpulint"] = _first_line([sys.executable, "-m", "gpulint", "--version"], bench.gpulint_env)
        commit = _first_line(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "gpulint"],
                               capture_output=True, text=True).stdout.strip()
        v["gpulint"] += f" (commit {commit}{', gpulint/ modified' if dirty else ''}"
        v["gpulint"] += f"; sources {bench.src_hash}, copied at the start)" if bench.src_hash else ")"
    if "ruff" in tools:
        v["ruff"] = _first_line([bench.args.ruff, "--version"])
    if "torchfix" in tools:
        v["torchfix"] = "torchfix " + _first_line([str(bench.venv_bin("torchfix", "torchfix")), "--version"])
    if "fixit" in tools:
        v["fixit"] = _first_line([str(bench.venv_bin("fixit", "fixit")), "--version"])
    return v


# ------------------------------------------------------------------ report
def _fmt_s(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def render(res: dict) -> str:
    m = res["machine"]
    out = []
    out.append(f"Measured {m['date']} on {m['cores']} cores ({m['cpu']}), {human_bytes(m.get('memory'))} RAM,"
               f" Python {m['python']}, {m['platform']}; load average {m['loadavg_start'][0]:.2f} at the start,"
               f" {m['loadavg_end'][0]:.2f} at the end.")
    out.append("Tools: " + "; ".join(f"{v}" for v in res["versions"].values()) + ".")
    out.append("")
    out.append("| package | version | .py files | lines | files mentioning torch |")
    out.append("|---|---|---|---|---|")
    for name, version in res["package_versions"]:
        s = res["corpus"][name]
        out.append(f"| {name} | {version} | {s['files']:,} | {s['lines']:,} | {s['torch_files']:,} |")
    tot = {k: sum(res["corpus"][n][k] for n, _ in res["package_versions"]) for k in ("files", "lines", "torch_files")}
    out.append(f"| **all** | | {tot['files']:,} | {tot['lines']:,} | {tot['torch_files']:,} |")
    out.append("")
    rss_note = "peak RSS (process tree)" if m.get("psutil") else "peak RSS (largest single process)"
    out.append(f"| tool | run | packages | runs | wall s (median) | min-max | files/s | s per 100k lines |"
               f" {rss_note} | CPU/wall | findings |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    allp = res["packages"]
    for r in res["rows"]:
        pk = "all" if r["packages"] == allp else "+".join(r["packages"])
        rss = r["peak_rss"] if r["peak_rss"] is not None else r["max_single_rss"]
        out.append(f"| {r['tool']} | {r['scenario']} | {pk} | {r['reps']} | {_fmt_s(r['wall'])} |"
                   f" {r['wall_min']:.2f}-{r['wall_max']:.2f} | {r['files_per_s']:,.0f} |"
                   f" {_fmt_s(r['s_per_100k_lines'])} |"
                   f" {human_bytes(rss)} | {_fmt_s(r['cores_used'])} | {r['findings']:,} |")
    out.append("")
    notes = []
    for r in res["rows"]:
        if r["scenario"] == "one file changed":
            notes.append(f"One file changed: `{r['changed_file']}` ({r['changed_file_lines']:,} lines) had a comment"
                         f" appended; linting that file takes {r['file_time']:.3f} s (in a process with gpulint"
                         f" loaded, median of 7).")
    if res.get("jobs_speedup") is not None:
        notes.append(f"`-j 2` is {res['jobs_speedup']:.2f}x as fast as `-j 1` (cold, median of each).")
    if res.get("cache_fill"):
        notes.append(f"Filling the cache (first run with it on) took {res['cache_fill']['wall']:.2f} s.")
    if not m.get("psutil"):
        notes.append("psutil was not installed: peak RSS is the largest single process's ru_maxrss, not the"
                     " sum over the process tree.")
    out.extend(f"- {n}" for n in notes)
    if res.get("scaling"):
        out.append("")
        out.append("How the cold run's cost grows with the corpus (packages added in this order):")
        out.append("")
        out.append("| packages | files | lines | runs | wall s (median) | s per 100k lines | peak RSS |")
        out.append("|---|---|---|---|---|---|---|")
        for s in res["scaling"]:
            out.append(f"| {len(s['packages'])}: {'+'.join(s['packages'])} | {s['files']:,} | {s['lines']:,} |"
                       f" {s['reps']} | {s['wall']:.2f} | {s['s_per_100k_lines']:.2f} | {human_bytes(s['peak_rss'])} |")
    out.append("")
    if res["problems"]:
        out.append("Targets missed in this run:")
        out.append("")
        out.extend(f"- {p}" for p in res["problems"])
    else:
        out.append("Every target measured in this run was met.")
    return "\n".join(out) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    # every rule on by default, preview ones too, as before the preview tier (an
    # older gpulint ignores the variable, so runs of old and new code compare)
    os.environ["GPULINT_PREVIEW"] = "1"
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(), "gpulint-speed-corpus"))
    ap.add_argument("--packages", default=None,
                    help="comma-separated names, or N for the first N of: " + ", ".join(n for n, _ in PACKAGES))
    ap.add_argument("--tools", default="gpulint,ruff", help="comma-separated, of: " + ",".join(ALL_TOOLS))
    ap.add_argument("--subset", default=None,
                    help="packages (names or N) for TorchFix and Fixit; default: all selected packages")
    ap.add_argument("--scenarios", default=",".join(ALL_SCENARIOS),
                    help="gpulint scenarios, of: " + ",".join(ALL_SCENARIOS))
    ap.add_argument("--reps", type=int, default=3, help="runs per measurement for gpulint and ruff (default 3)")
    ap.add_argument("--slow-reps", type=int, default=1, help="runs per measurement for torchfix and fixit (default 1)")
    ap.add_argument("--ruff", default=shutil.which("ruff") or "ruff")
    ap.add_argument("--json", default=None, help="write the raw results to this file")
    ap.add_argument("--write-doc", action="store_true", help=f"write the table into {DOC.relative_to(ROOT)}")
    ap.add_argument("--doc", default=str(DOC), help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--live", action="store_true",
                    help="run gpulint from the checkout itself, not from a copy of gpulint/ taken at the start")
    args = ap.parse_args(argv)
    try:
        packages = select_packages(args.packages)
        subset_pkgs = select_packages(args.subset, packages) if args.subset else packages
        tools = parse_list(args.tools, ALL_TOOLS, "tool")
        scenarios = parse_list(args.scenarios, ALL_SCENARIOS, "scenario")
    except ValueError as e:
        ap.error(str(e))
    if args.reps < 1 or args.slow_reps < 1:
        ap.error("--reps and --slow-reps must be at least 1")

    info = machine()
    sources = fetch(Path(args.corpus), packages)
    stats = corpus_stats(sources)
    snap = src_hash = None
    if "gpulint" in tools and not args.live:
        snap = Path(tempfile.mkdtemp(prefix="gpulint-speed-src-"))
        src_hash = snapshot_gpulint(snap)
    try:
        bench = Bench(args, sources, stats, snap)
        bench.src_hash = src_hash
        return _run(args, bench, info, packages, subset_pkgs, tools, scenarios, stats)
    finally:
        if snap is not None:
            shutil.rmtree(snap, ignore_errors=True)


def _run(args, bench, info, packages, subset_pkgs, tools, scenarios, stats) -> int:
    versions = tool_versions(bench, tools)
    print(f"corpus: {sum(s['files'] for s in stats.values()):,} files, {sum(s['lines'] for s in stats.values()):,}"
          f" lines under {bench.corpus}", file=sys.stderr)
    res = bench.run_all(tools, scenarios, tuple(n for n, _ in subset_pkgs))
    info["loadavg_end"] = os.getloadavg()
    res.update(machine=info, versions=versions, package_versions=packages,
               corpus={n: {k: v for k, v in s.items() if k != "file_list"} for n, s in stats.items()})
    res["problems"] = check_targets(res)
    text = render(res)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    if args.write_doc:
        doc = Path(args.doc)
        doc.write_text(replace_between_markers(doc.read_text(encoding="utf-8"), text), encoding="utf-8")
    for p in res["problems"]:
        print("target missed:", p, file=sys.stderr)
    return 1 if args.check and res["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
