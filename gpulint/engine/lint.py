"""The engine: read -> cheap pre-filter -> parse once (stdlib `ast`) -> one
traversal that feeds every selected rule -> suppressions.

Parsing with the stdlib `ast` costs about a tenth of a LibCST parse, and the
shared analysis is lazy: a file that never mentions what a rule looks for is
not parsed for it at all. LibCST is used by fixes, on the files that have
findings, and to parse a file `ast.parse` refuses: syntax of a newer Python,
rewritten for this one (gpulint/lowering/).
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import dataclasses
import gc
import os
import re
import stat
import sys
import warnings
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from gpulint.model.control.constants import dead_statements
from gpulint.model.control.steps import may_start
from gpulint.model.file import FileModel
from gpulint.model.values.callfacts import NO_FACTS, ProgramFacts
from gpulint.model.index.nodes import LOOPS, is_main_guard
from gpulint.model.index.tree import is_test_path, may_use_accelerator, mentions
from gpulint.model.index.walk import walk
from gpulint.model.names import other_framework, torch_ceiling
from gpulint.model.project.facts import model_with_facts, partial_summary
from gpulint.model.project.programs import TOLD_ALONE
from gpulint.model.project.modules import is_package, module_names
from gpulint.model.project.layers import may_build_layers
from gpulint.model.project.summary import may_start_steps
from gpulint.rule import INTERNAL_ERROR, LATEST_TORCH, SAFE, UNSAFE, Edit, Finding, Fix, Rule
from gpulint.registry import all_rules
from gpulint.source import Source
from gpulint.engine.suppress import Suppressions

MAX_FILE_BYTES = 50 * 1024 * 1024  # larger files are reported, not linted
CODING_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class LintError(Exception):
    """A file that could not be read or parsed; the message is one line. A
    syntax error also carries its (row, column) and the parser's message."""

    def __init__(self, message: str, location: Optional[Tuple[int, int]] = None, detail: str = "",
                 code: Optional[str] = None, cell: Optional[int] = None) -> None:
        super().__init__(message)
        self.location = location
        self.detail = detail
        self.code = code  # INVALID_SYNTAX, IO_ERROR or INTERNAL_ERROR; None: decided by where it was raised
        self.cell = cell  # a notebook's cell, where `location` is then


@dataclass(frozen=True)
class LintOptions:
    codes: Tuple[str, ...]  # the selected rules
    torch_version: Tuple[int, ...] = LATEST_TORCH  # the oldest torch the code must run on
    # the newest torch it may run on (None: torch_version); a cost that only old
    # torch has is real only when every allowed version is old
    torch_newest: Optional[Tuple[int, ...]] = None
    unfixable: Tuple[str, ...] = ()  # rules whose fixes are dropped
    safe_fixes: Tuple[str, ...] = ()  # rules whose unsafe fixes count as safe
    unsafe_fixes: Tuple[str, ...] = ()  # rules whose safe fixes count as unsafe
    # which suppression comments drop findings: `# noqa`, and gpulint's own
    # `# gpulint: ignore[...]` / `# gpulint: skip-file`. The flake8 plugin turns
    # `noqa` off: flake8 applies `# noqa` itself, and --disable-noqa must show all.
    noqa: bool = True
    gpulint_comments: bool = True
    # preview behaviour of stable rules (`--preview`)
    preview: bool = False


class FileContext:
    """What a rule sees while the engine walks one file."""

    def __init__(self, path: str, source: Source, tree: ast.Module, options: LintOptions,
                 model: Optional[FileModel] = None) -> None:
        self.path = path
        self.source = source
        self.tree = tree
        self.options = options
        self.torch_version = options.torch_version
        self.torch_newest = options.torch_newest or options.torch_version
        self.preview = options.preview
        self.current: Optional[ast.AST] = None  # the node the engine is visiting
        self._ancestors: List[ast.AST] = []
        self._ancestors_of: Optional[ast.AST] = None
        self.analysis = model if model is not None else FileModel(tree, source.text, path)
        self.findings: List[Finding] = []

    @property
    def ancestors(self) -> List[ast.AST]:
        """The ancestors of the node being visited, from the module down to
        its parent (read from the index when a rule first asks, once per
        node: most visits return before they look)."""
        cur = self.current
        if cur is None:
            return []
        if self._ancestors_of is not cur:
            self._ancestors = self.analysis.index.ancestors(cur)
            self._ancestors_of = cur
        return self._ancestors

    # shortcuts into the shared analysis
    def qualname(self, node: ast.AST) -> Optional[str]:
        return self.analysis.imports.qualname(node)

    def report(self, rule: Rule, node: ast.AST, message: str, fix: Optional[Fix] = None) -> None:
        start, end = self.source.node_span(node)
        ancestors = self.ancestors if self._is_current(node) else self.analysis.index.ancestors(node)
        noqa_row = None
        for anc in reversed(list(ancestors) + [node]):
            if isinstance(anc, ast.stmt):
                noqa_row = anc.lineno
                break
        self.report_span(rule, start, end, message, fix, noqa_row)

    def report_span(self, rule: Rule, start: int, end: int, message: str, fix: Optional[Fix] = None,
                    noqa_row: Optional[int] = None) -> None:
        """A finding over the text's [start, end) (absolute character offsets)."""
        src = self.source
        row, col = src.position(start)
        end_row, end_col = src.position(end)
        if fix is not None:
            fix = Fix(
                fix.message,
                tuple(
                    Edit(e.start, e.end, e.content, src.position(e.start), src.position(e.end))
                    for e in fix.edits
                ),
                fix.applicability,
            )
        self.findings.append(Finding(rule.code, rule.name, message, self.path, row, col, end_row, end_col,
                                     row if noqa_row is None else noqa_row, fix))

    def _is_current(self, node: ast.AST) -> bool:
        # rules usually report the node being visited, whose ancestors are at hand
        return node is self.current

    def node_text(self, node: ast.AST) -> str:
        return self.source.node_text(node)


_RULE_CACHE: Dict[Tuple[str, ...], list] = {}


def _rules_for(codes: Tuple[str, ...]) -> list:
    """Rule instances and their visitor methods, built once per selection."""
    cached = _RULE_CACHE.get(codes)
    if cached is None:
        registry = all_rules()
        cached = []
        for c in codes:
            if c not in registry:
                continue
            rule = registry[c]()
            visitors = []
            for attr in dir(rule):
                if attr.startswith("visit_"):
                    node_type = getattr(ast, attr[6:], None)
                    if isinstance(node_type, type):
                        visitors.append((node_type, getattr(rule, attr)))
            cached.append((rule, visitors))
        _RULE_CACHE[codes] = cached
    return cached


def coding_line(data: bytes) -> Optional[str]:
    """The encoding a PEP 263 coding line of `data` names (on one of its first
    two lines, the first a comment where it is the second); None where it has
    none, or starts with a UTF-8 BOM."""
    if data.startswith(codecs.BOM_UTF8):
        return None
    for line in data.split(b"\n", 2)[:2]:
        m = CODING_RE.match(line)
        if m:
            return m.group(1).decode("ascii", "replace")
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return None


def text_encoding(data: bytes) -> str:
    """The encoding `decode_source` reads `data` in (and a fix writes it back
    in): the coding line's, where Python knows that codec; else UTF-8."""
    declared = coding_line(data)
    if declared is None:
        return "utf-8"
    try:
        codecs.lookup(declared)
    except LookupError:
        return "utf-8"
    return declared


def decode_source(data: bytes, path: str) -> str:
    """Decode bytes as Python does (BOM, PEP 263 coding line, else UTF-8)."""
    if b"\x00" in data:
        raise LintError("source contains NUL bytes")
    skipped = 0
    if data.startswith(codecs.BOM_UTF8):
        skipped = len(codecs.BOM_UTF8)
        data = data[skipped:]
        encoding = "utf-8"
    else:
        encoding = coding_line(data) or "utf-8"
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        # a codec that a package installs to rewrite UTF-8 source for older Pythons
        # (`future_fstrings`, pomdp-baselines' learner): the text is UTF-8, as Ruff reads it
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise LintError(f"unknown encoding in coding line: {encoding!r}, and the file is not UTF-8")
    if not getattr(info, "_is_text_encoding", True):  # base64, rot13, zlib...: Python refuses them too
        raise LintError(f"coding line names {encoding!r}, which is not a text encoding")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LintError(f"cannot decode as {encoding}: {exc.reason} at line {line} (byte {exc.start + skipped})")
    except (UnicodeError, LookupError, ValueError) as exc:
        raise LintError(f"cannot decode as {encoding}: {exc}")


def _read_error(exc: OSError) -> LintError:
    if isinstance(exc, FileNotFoundError):  # found by discovery, gone by now
        return LintError("no such file (removed during the run?)")
    return LintError(f"cannot read: {exc.strerror or exc}")


def read_source(path: str) -> str:
    return decode_source(read_bytes(path), path)


def read_bytes(path: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """A file's bytes; a clear LintError for what is not a regular file or too large."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _read_error(exc)
    if stat.S_ISDIR(st.st_mode):
        raise LintError("is a directory")
    if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block or never end
        raise LintError("not a regular file")
    if st.st_size > max_bytes:
        raise LintError(f"file is too large to lint ({st.st_size // (1024 * 1024)} MB)")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise _read_error(exc)
    return data


# lower every file to this grammar, as if the running Python were that old: the tests'
# and bench/lowering_cost.py's switch, read by `parse` and by fixes.validate_code
FORCE_LOWER_TO: Optional[Tuple[int, int]] = None


def parse(text: str, path: str) -> ast.Module:
    if FORCE_LOWER_TO is not None:
        return _parse_newer(text, path, None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path, type_comments=False)
    except SyntaxError as exc:
        return _parse_newer(text, path, exc)
    except (RecursionError, MemoryError):
        raise LintError("expression is nested too deeply to parse")
    except ValueError as exc:
        raise LintError(f"cannot parse: {exc}")


def _grammar() -> str:
    return f"Python {sys.version_info[0]}.{sys.version_info[1]}"


def _syntax_error(exc: SyntaxError) -> LintError:
    # the grammar is the running Python's: say which, for code written for a newer one
    msg = f"{exc.msg or 'invalid syntax'} ({_grammar()} grammar)"
    if exc.lineno:
        return LintError(f"syntax error at {exc.lineno}:{exc.offset or 0}: {msg}", (exc.lineno, exc.offset or 0), msg)
    return LintError(f"syntax error: {msg}")


def _parse_newer(text: str, path: str, exc: Optional[SyntaxError]) -> ast.Module:
    """A file `ast.parse` refused: syntax of a newer Python, parsed by LibCST
    and rewritten for this one (gpulint/lowering/), or the syntax error."""
    from gpulint import lowering

    try:
        return lowering.parse(text, path, FORCE_LOWER_TO)
    except lowering.NotPython:
        if exc is None:  # only when forced
            raise LintError("syntax error (LibCST)")
        raise _syntax_error(exc)
    except lowering.CannotLower as why:
        msg = f"syntax newer than {_grammar()}'s that gpulint could not rewrite for it: {why}"
        loc = why.location or ((exc.lineno, exc.offset or 0) if exc is not None and exc.lineno else None)
        if loc is not None:
            raise LintError(f"syntax error at {loc[0]}:{loc[1]}: {msg}", loc, msg)
        raise LintError(f"syntax error: {msg}")
    except (RecursionError, MemoryError):
        raise LintError("expression is nested too deeply to parse")


def _wanted(rule: Rule, text: str) -> bool:
    return not rule.needles or any(mentions(text, n) for n in rule.needles)


@dataclass(frozen=True)
class ProjectInput:
    """How the project sees a file: the module names it can be imported as
    (main one first), and the facts table of the project's call graph for
    it (None: read the file alone, with its own call graph)."""

    names: Tuple[str, ...]
    package: bool = False
    table: Optional[dict] = None
    # summarize the file even when nothing in it can start a step (see `lint_module`)
    summarize: bool = False
    # read the layers its models build, even when its summary is left for later
    layers: bool = False
    # read for the summary only, with no rule: what the last read found stands
    # (the project asks a file read without facts for its layers: its findings
    # do not depend on them)
    summary_only: bool = False
    # no rule of the run is selected: the file is only parsed (a syntax error is still
    # reported), and neither read for the project nor summarized
    parse_only: bool = False


@dataclass
class ModuleResult:
    findings: List[Finding]
    summary: Optional[dict] = None  # the file's summary for the project's call graph
    table: Optional[dict] = None  # the facts table the file was read with
    deferred: bool = False  # the summary was left for when the project asks for it
    accelerator: bool = True  # the text may put tensors on an accelerator (`may_use_accelerator`)


# words without which a file adds nothing to the project's call graph: no
# step, no generator, no loader, no device (its calls reach nothing hot)
_PROJECT_WORDS = ("backward", ".step(", "yield", "DataLoader", ".item()")


def builds_tensors(text: str) -> bool:
    """The text defines functions and calls torch or numpy, or defines a
    module's `forward`: a helper that per-step code may call
    (`create_sin_embedding` in a file with no device word, a submodule a
    model holds), or whose arrays a loader takes (`get_sub_seqs`), whose
    summary the project asks for when it does."""
    return "def " in text and ("torch." in text or "np." in text or "numpy." in text or "def forward" in text)


def takes_part(text: str, accelerator: bool, tree: ast.Module) -> bool:
    """The file may add to the project's call graph (see `_PROJECT_WORDS`), or
    ask it about the models it trains;
    `accelerator`: `may_use_accelerator(text)`, which the caller has already."""
    # (a script without a def can still train at its top level, on models defined elsewhere,
    # or run whole trainings in a loop: `for ii in range(args.itr): exp.train(setting)`, also
    # under a module-level `if args.is_training:`)
    return ("def " in text or "backward" in text or _module_level_loop(tree.body)) and (
        accelerator or any(w in text for w in _PROJECT_WORDS))


def _module_level_loop(stmts) -> bool:
    """A `for`/`while` among the module's statements, or in the blocks of its
    module-level `if`/`with`/`try` statements (not in a def or class)."""
    return any(isinstance(stmt, LOOPS) or (
        isinstance(stmt, (ast.If, ast.With, ast.AsyncWith, ast.Try, ast.ExceptHandler))
        and _module_level_loop(ast.iter_child_nodes(stmt))) for stmt in stmts)


def lint_source(text: str, path: str, options: LintOptions, tree: Optional[ast.Module] = None) -> List[Finding]:
    """Lint one file's text. Raises LintError when it cannot be parsed.

    `tree` is `ast.parse(text)` where the caller has it already (flake8 hands
    its plugins the tree); the rules do not modify it. The file is read
    alone: its own functions' summaries answer for calls among them."""
    return lint_module(text, path, options, tree).findings


def lint_module(text: str, path: str, options: LintOptions, tree: Optional[ast.Module] = None,
                project: Optional[ProjectInput] = None) -> ModuleResult:
    """`lint_source`, as a module of a project: also the file's summary and
    the facts it was read with (`ProjectInput.table`, or its own)."""
    told = project.table if project is not None and project.table is not None else {}
    per_step = bool(told.get("every_step"))
    test_file = is_test_path(path, text)
    selected = [
        (r, v) for r, v in _rules_for(tuple(options.codes))
        if (_wanted(r, text) or (per_step and r.reads_every_step_functions) or any(told.get(k) for k in r.reads_table_keys))
        and not (test_file and r.skips_test_files)
    ]
    if tree is None:
        tree = parse(text, path)  # always: a file that does not parse is reported, needles or not
    if project is not None and project.parse_only:
        return ModuleResult([], None, None, False, may_use_accelerator(text))
    if selected and other_framework(tree, text) is not None:
        selected = []  # Paddle or TensorFlow code: no rule is about it
    own_pin = pinned(options)
    ceiling = torch_ceiling(tree, text)
    if ceiling is not None and ceiling < options.torch_version:
        # it imports a module torch has removed (`torch._six`): it runs on the older torch only,
        # a pin its program shares (`ProjectGraph.program_facts`)
        options = dataclasses.replace(options, torch_version=ceiling, torch_newest=ceiling)
        own_pin = ceiling
    program_pin = project.table.get("torch_pin") if project is not None and project.table else None
    # a default device that a file of the program sets, a self-test block other files import
    # past, the classes their layers build every call (the rules of a file read without facts see them)
    told_table = project.table if project is not None and project.table else {}
    told_alone = {k: told_table[k] for k in TOLD_ALONE if k != "torch_pin" and told_table.get(k)}
    program = ProgramFacts(told_alone) if told_alone else NO_FACTS
    if program_pin is not None and tuple(program_pin[0]) < options.torch_version:
        # a file its program runs with pins an older torch (`ProjectGraph.program_facts`)
        options = dataclasses.replace(options, torch_version=tuple(program_pin[0]))
    model = summary = table = probe = None
    deferred = False
    accelerator = may_use_accelerator(text)
    if project is None:
        project = ProjectInput(tuple(module_names(path, ())), is_package(path))
    # a table that says only which torch the file's program pins tells the model nothing
    facts = project.table if project.table is not None and set(project.table) - set(TOLD_ALONE) else None
    if takes_part(text, accelerator, tree) or project.summarize:  # (per-step code calls into a file it asks for)
        if facts is None and not project.summarize and (
                not may_start_steps(text) or not may_start(probe := FileModel(tree, text, path, program))):
            # nothing here can start a step: its summary matters only if per-step code calls
            # into it, which the project finds out and asks for (`ProjectInput.summarize`);
            # the model read to tell is the one the rules read
            deferred = True
        else:
            told = told_alone if told_alone and facts is None else None
            model, summary, table = model_with_facts(tree, text, path, project.names, project.package, facts,
                                                     like=probe, told=told)  # (which it closes)
            if program_pin is not None:
                table = dict(table or {}, torch_pin=program_pin)
    if summary is None:
        # what a package re-exports, for the call graph; the layers the file's models build
        # when the project asks (a training loop imports the file), else it is left for then
        asked = project.summarize or project.layers
        summary = partial_summary(tree, text, project.names, project.package, layers=asked)
        if (not asked and may_build_layers(text)) or (not project.summarize and builds_tensors(text)):
            deferred = True  # (a helper of tensor code: per-step code may call it, `demanded`)
    if model is None and project.table:
        # (what the file was read with: `facts_key`)
        table = {k: project.table[k] for k in TOLD_ALONE if project.table.get(k) is not None} or None
    if own_pin is not None and summary is not None:
        summary["pin"] = list(own_pin)  # (the project joins it to the files of the same program)
    read = model if model is not None else probe  # (the model read to tell it was deferred)
    if read is None and program is not NO_FACTS and selected and not project.summary_only:
        read = FileModel(tree, text, path, program)
    findings = [] if not selected or project.summary_only else _lint_tree(text, path, options, tree, selected, read)
    if findings and project.table and project.table.get("self_test"):
        findings = _outside_self_test(findings, tree, {r.code for r, _ in selected if r.skips_test_files})
    if read is not None:
        read.close()
    return ModuleResult(findings, summary, table, deferred, accelerator)


def _outside_self_test(findings: List[Finding], tree: ast.Module, skipping: set) -> List[Finding]:
    """`findings` less those of rules that skip test files (`skipping`) inside
    the file's `if __name__ == "__main__":` blocks that take no input: in a
    module that other files of the project import, such a block is the
    module's self-test (a few steps run by hand, not the training the
    project runs; `self_test_block`)."""
    blocks = [(s.lineno, s.end_lineno or s.lineno) for s in tree.body if is_main_guard(s)]
    return [f for f in findings if f.code not in skipping or not any(a <= f.row <= b for a, b in blocks)]


def pinned(options: LintOptions) -> Optional[Tuple[int, ...]]:
    """The torch version the file's project pins, where it pins one: the
    oldest it must run on, below the newest it may (`torch_newest`)."""
    newest = options.torch_newest
    return options.torch_version if newest is not None and newest > options.torch_version else None


def _lint_tree(text: str, path: str, options: LintOptions, tree: ast.Module, selected: list,
               model: Optional[FileModel]) -> List[Finding]:
    source = Source(text)
    ctx = FileContext(path, source, tree, options, model)
    rules = [r for r, _ in selected]
    dispatch: Dict[type, list] = {}
    for _, visitors in selected:
        for node_type, method in visitors:
            dispatch.setdefault(node_type, []).append(method)
    for rule in rules:
        begin = getattr(rule, "begin_file", None)
        if begin:
            begin(ctx)
    if dispatch:
        try:
            _walk(tree, ctx, dispatch)
        except RecursionError:
            raise LintError("code is nested too deeply to analyse", code=INTERNAL_ERROR)
    for rule in rules:
        end = getattr(rule, "end_file", None)
        if end:
            end(ctx)
    if model is None:
        ctx.analysis.close()  # (the caller closes a model it made)
    findings = ctx.findings
    judge = next((r for r in rules if r.judges_suppressions), None)
    if findings or judge is not None:
        if options.noqa or options.gpulint_comments:
            sup = Suppressions(
                text, noqa=options.noqa, directives=options.gpulint_comments,
                tokens_text=getattr(tree, "gpulint_lowered_text", None),
            )
            if sup.skip_file:
                return []
            findings = [
                f for f in findings if not sup.suppressed(f.code, f.name, {f.row, f.noqa_row})
            ]
            if judge is not None and sup.named:
                findings += _unused_suppressions(ctx, judge, sup)
        # one finding per rule and location
        seen = set()
        unique = []
        for f in sorted(findings, key=Finding.sort_key):
            key = (f.code, f.row, f.col)
            if key not in seen:
                seen.add(key)
                unique.append(f)
        findings = unique
        if options.unfixable or options.safe_fixes or options.unsafe_fixes:
            findings = [_apply_fix_policy(f, options) for f in findings]
    return findings


def _unused_suppressions(ctx: FileContext, judge: Rule, sup: Suppressions) -> List[Finding]:
    """What `judge` (the unused-noqa rule) reports of the codes that
    suppressed nothing, among the rules selected for the file (one that a
    needle or the file's kind kept from running could not have found
    anything; one the run did not select is not judged: its comment is
    left alone), less what a comment naming the judge itself suppresses."""
    registry = all_rules()
    ran = {key for c in ctx.options.codes if c in registry and c != judge.code
           for key in (c, registry[c].name)}
    ctx.findings = []
    judge.judge_suppressions(ctx, sup.unused(ran.__contains__))  # type: ignore[attr-defined]
    return [f for f in ctx.findings if not sup.suppressed(f.code, f.name, {f.row})]


def _apply_fix_policy(f: Finding, options: LintOptions) -> Finding:
    if f.fix is None:
        return f
    if f.code in options.unfixable:
        return dataclasses.replace(f, fix=None)
    if f.code in options.unsafe_fixes and f.fix.applicability == SAFE:
        return dataclasses.replace(f, fix=dataclasses.replace(f.fix, applicability=UNSAFE))
    if f.code in options.safe_fixes and f.fix.applicability == UNSAFE:
        return dataclasses.replace(f, fix=dataclasses.replace(f.fix, applicability=SAFE))
    return f


def _walk(node: ast.AST, ctx: FileContext, dispatch: Dict[type, list]) -> None:
    """Every node of a type some selected rule visits, in source order (pre-order)."""
    get = dispatch.get
    index = ctx.analysis.index
    dead = dead_statements(index)  # `if DEBUG:` with `DEBUG = False`: no rule looks inside
    try:
        if not dead:
            for cur in index.nodes(*dispatch):
                ctx.current = cur
                for h in get(cur.__class__):
                    h(cur, ctx)
            return
        skipped: set = set()  # the nodes of the dead statements' subtrees
        for cur in index.order:
            if id(cur) in skipped:
                continue
            if id(cur) in dead:
                skipped.update(id(n) for n in walk(cur))
                continue
            handlers = get(cur.__class__)
            if handlers:
                ctx.current = cur
                for h in handlers:
                    h(cur, ctx)
    finally:
        ctx.current = None


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """CPython's cycle collector off while one file is linted.

    It runs every few hundred allocations, and parsing and analysing a file
    allocates hundreds of thousands of objects that all stay alive until the
    file is done, so each collection re-scans them for nothing: about a fifth
    of the time of `ast.parse` alone (bench/cost_floor.py). Paused per file,
    not for the whole run: the few reference cycles a file leaves behind are
    freed by the first collection after it, so memory stays flat."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
