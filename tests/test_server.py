"""`gpulint server`: real LSP sessions against `python3 -m gpulint server`
over stdio (tests/lsp_client.py), and the pure parts (gpulint.frontends.server.core)
in-process."""

from __future__ import annotations

import json

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpulint.registry import all_rules

from gpulint.frontends.server.core import (
    UTF8,
    UTF16,
    UTF32,
    DocumentLinter,
    LineIndex,
    apply_changes,
    code_units,
    diff_changes,
    noqa_change,
)
from cli_helpers import invoke
from helpers import METER_ITEM_ROW, METER_PY, SCALER_PY
from lsp_client import ROOT, LspClient, apply_text_edits, edits_of, uri_of

# A document with a safe fix (GPU203, after non-BMP and non-ASCII characters
# on its line) and an unsafe one (GPU302).
DOC = """\
import torch
import helpers

class PositionalEncoding(torch.nn.Module):
    def forward(self, x):
        label = "😀 é"; positions = torch.arange(x.size(1)).to(x.device)
        return x + self.table[positions]


def step(opt):
    opt.zero_grad(set_to_none=False)
"""
CLEAN = "import torch\n\nx = torch.zeros(3)\n"

needs_pygls = pytest.mark.skipif(
    not all(__import__("importlib").util.find_spec(m) for m in ("pygls", "lsprotocol")),
    reason="needs the server extra (pygls)",
)


def utf16(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def span_of(text: str, line: int, start_sub: str, end_sub: str) -> dict:
    """The LSP range (UTF-16) on 0-based `line` from `start_sub` to the end of `end_sub`."""
    ln = text.splitlines()[line]
    a = ln.index(start_sub)
    b = ln.index(end_sub, a) + len(end_sub)
    return {"start": {"line": line, "character": utf16(ln[:a])}, "end": {"line": line, "character": utf16(ln[:b])}}


def gpulint_fix(tmp: Path, name: str, text: str, *flags: str) -> str:
    """What `gpulint fix --apply` makes of `text` (a file of its own, bytes as given)."""
    d = tmp / "fixcmp"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_bytes(text.encode("utf-8"))
    res = invoke(["fix", "--apply", *flags, str(p)], cwd=d)
    assert res.exit_code in (0, 1), res.output
    return p.read_bytes().decode("utf-8")


@pytest.fixture
def workspace(tmp_path):
    """A project whose code must never be imported: a fake `torch` and a
    user module that leave a marker file when imported."""
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "IMPORTED"
    (ws / "torch").mkdir()
    (ws / "torch" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('torch')\n")
    (ws / "helpers.py").write_text(f"open({str(marker)!r}, 'w').write('helpers')\n")
    return ws, marker


@pytest.fixture
def client_factory():
    clients = []

    def make(cwd: Path, *args: str) -> LspClient:
        c = LspClient(cwd, args)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.kill()


def find_action(actions, title_start):
    found = [a for a in actions if a["title"].startswith(title_start)]
    assert len(found) == 1, [a["title"] for a in actions]
    return found[0]


@needs_pygls
def test_session_diagnostics_quick_fixes_fix_all_and_exit(workspace, client_factory, tmp_path):
    ws, marker = workspace
    path = ws / "model.py"
    path.write_text(CLEAN)  # the disk copy is clean: only the in-memory text may be linted
    c = client_factory(ws)
    init = c.initialize(ws)
    caps = init["capabilities"]
    assert caps["positionEncoding"] == "utf-16"
    assert set(caps["codeActionProvider"]["codeActionKinds"]) == {"quickfix", "source.fixAll.gpulint"}
    assert caps["textDocumentSync"]["change"] == 1  # full

    uri = c.open(path, DOC)
    diags = c.diagnostics(uri, version=1)
    assert [(d["code"], d["range"]) for d in diags] == [
        ("GPU203", span_of(DOC, 5, "torch.arange", ".to(x.device)")),
        ("GPU302", span_of(DOC, 10, "opt.zero_grad", "set_to_none=False)")),
    ]
    # the emoji counts two UTF-16 units: the column is not the character index
    assert diags[0]["range"]["start"]["character"] == DOC.splitlines()[5].index("torch.arange") + 1
    for d in diags:
        assert d["severity"] == 2 and d["source"] == "gpulint" and d["message"]
        assert d["codeDescription"]["href"].endswith(f"/docs/rules/{all_rules()[d['code']].name}.md")

    # GPU203: a safe quick fix, preferred; applied, it is what `gpulint fix` makes
    acts = c.code_actions(uri, diags[0]["range"], diags[:1])
    fix203 = find_action(acts, "gpulint (GPU203)")
    assert fix203["kind"] == "quickfix" and fix203["isPreferred"] is True and "(unsafe)" not in fix203["title"]
    assert [d["code"] for d in fix203["diagnostics"]] == ["GPU203"]
    assert not any("GPU302" in a["title"] for a in acts)  # only what the range touches
    edit = fix203["edit"]
    assert edit["documentChanges"][0]["textDocument"] == {"uri": uri, "version": 1}
    after203 = apply_text_edits(DOC, edits_of(edit, uri))
    assert after203 == gpulint_fix(tmp_path, "model.py", DOC)
    assert "torch.arange(x.size(1), device=x.device)" in after203

    # GPU302: unsafe, labelled so and not preferred; both fixes = `gpulint fix --unsafe-fixes`
    acts = c.code_actions(uri, diags[1]["range"], diags[1:])
    fix302 = find_action(acts, "gpulint (GPU302)")
    assert fix302["title"].endswith("(unsafe)") and fix302.get("isPreferred") is not True
    both = apply_text_edits(after203, edits_of(fix302["edit"], uri))  # GPU302's line is untouched by GPU203's fix
    assert both == gpulint_fix(tmp_path, "model.py", DOC, "--unsafe-fixes")

    # source.fixAll.gpulint: every safe fix, as `gpulint fix`
    (fix_all,) = c.code_actions(uri, {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                only=["source.fixAll"])
    assert fix_all["title"] == "Fix all gpulint safe fixes" and fix_all["kind"] == "source.fixAll.gpulint"
    assert apply_text_edits(DOC, edits_of(fix_all["edit"], uri)) == gpulint_fix(tmp_path, "model.py", DOC)
    assert c.code_actions(uri, diags[0]["range"], only=["quickfix"]) and all(
        a["kind"] == "quickfix" for a in c.code_actions(uri, diags[0]["range"], only=["quickfix"]))
    # an explicit request lists fix-all too; an automatic one (the lightbulb) does not compute it
    assert "Fix all gpulint safe fixes" in [a["title"] for a in c.code_actions(uri, diags[0]["range"], trigger_kind=1)]
    assert "Fix all gpulint safe fixes" not in [a["title"] for a in c.code_actions(uri, diags[0]["range"], trigger_kind=2)]

    # the fixed text: GPU302 remains; fully fixed: no diagnostics at all
    c.change(uri, after203, 2)
    assert [d["code"] for d in c.diagnostics(uri, version=2)] == ["GPU302"]
    c.change(uri, both, 3)
    assert c.diagnostics(uri, version=3) == []

    # a burst of changes is linted once it settles (debounced), for the last text
    for v in range(10, 30):
        c.change(uri, after203 if v % 2 else DOC, v)
    assert [d["code"] for d in c.diagnostics(uri, version=29)] == ["GPU302"]
    burst = [n for n in c.notifications
             if n.get("method") == "textDocument/publishDiagnostics" and 10 <= (n["params"].get("version") or 0) < 29]
    assert len(burst) < 19, burst

    # didSave lints the in-memory text, not the (clean) disk copy
    c.change(uri, DOC, 4)
    assert len(c.diagnostics(uri, version=4)) == 2
    c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d["code"] for d in c.diagnostics(uri)] == ["GPU203", "GPU302"]

    # didClose clears them
    c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert c.diagnostics(uri) == []

    assert c.shutdown_and_exit() == 0
    assert not marker.exists(), f"the server imported the user's code ({marker.read_text()})"


@needs_pygls
def test_disable_for_this_line(workspace, client_factory):
    ws, _ = workspace
    c = client_factory(ws)
    c.initialize(ws)
    text = DOC.replace("torch.arange(x.size(1)).to(x.device)", "torch.arange(x.size(1)).to(x.device)  # type: ignore")
    uri = c.open(ws / "m.py", text)
    diags = c.diagnostics(uri, version=1)
    for version, d in enumerate(diags, 2):
        acts = c.code_actions(uri, d["range"], [d])
        dis = find_action(acts, f"Disable {d['code']} for this line")
        assert dis["kind"] == "quickfix"
        text = apply_text_edits(text, edits_of(dis["edit"], uri))
        c.change(uri, text, version)
        assert d["code"] not in [x["code"] for x in c.diagnostics(uri, version=version)]
    assert "# type: ignore  # noqa: GPU203" in text
    assert "opt.zero_grad(set_to_none=False)  # noqa: GPU302" in text

    # a line that has `# noqa: CODE` already gets the new code merged in
    merged = DOC.replace("opt.zero_grad(set_to_none=False)", "opt.zero_grad(set_to_none=False)  # noqa: GPU101")
    c.change(uri, merged, 10)
    (d302,) = [d for d in c.diagnostics(uri, version=10) if d["code"] == "GPU302"]
    dis = find_action(c.code_actions(uri, d302["range"], [d302]), "Disable GPU302")
    out = apply_text_edits(merged, edits_of(dis["edit"], uri))
    assert "# noqa: GPU101, GPU302" in out
    assert c.shutdown_and_exit() == 0


@needs_pygls
def test_config_is_the_cli_config(workspace, client_factory):
    ws, _ = workspace
    (ws / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.gpulint]
        ignore = ["GPU302"]
        torch-version = "2.3"
        extend-exclude = ["generated"]

        [tool.gpulint.per-file-ignores]
        "scripts/*" = ["GPU203"]
    """))
    amp = "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
    c = client_factory(ROOT)  # the server's cwd is elsewhere: the document's path decides
    c.initialize(ws)
    a = c.open(ws / "pkg" / "a.py", DOC)
    assert [d["code"] for d in c.diagnostics(a)] == ["GPU203"]  # GPU302 ignored
    b = c.open(ws / "scripts" / "b.py", DOC)
    assert c.diagnostics(b) == []  # per-file-ignores
    g = c.open(ws / "generated" / "g.py", DOC)
    assert c.diagnostics(g) == []  # excluded
    log = c.wait_for("window/logMessage", lambda p: "g.py" in p["message"])
    assert "exclude" in log["message"]
    old = c.open(ws / "pkg" / "amp.py", amp)
    assert c.diagnostics(old) == []  # GPU401 needs torch >= 2.4; the config says 2.3

    # the config is edited and saved: open documents are linted again with it
    (ws / "pyproject.toml").write_text("[tool.gpulint]\ntorch-version = \"2.4\"\n")
    c.notify("textDocument/didSave", {"textDocument": {"uri": uri_of(ws / "pyproject.toml")}})
    got = {}
    for _ in range(4):
        p = c.wait_for("textDocument/publishDiagnostics")
        got[p["uri"]] = sorted(d["code"] for d in p["diagnostics"])
    assert got[a] == ["GPU203", "GPU302"] and got[b] == ["GPU203", "GPU302"] and got[g] == ["GPU203", "GPU302"]
    assert got[old] == ["GPU401"]
    # a bad config: no diagnostics, one error shown, no crash
    (ws / "pyproject.toml").write_text("[tool.gpulint]\nselect = ['NOPE1']\n")
    c.change(a, DOC, 2)
    assert c.diagnostics(a, version=2) == []
    shown = c.wait_for("window/showMessage")
    assert shown["type"] == 1 and "NOPE1" in shown["message"]
    assert c.shutdown_and_exit() == 0


@needs_pygls
def test_bad_documents_give_no_crash_and_a_syntax_error_is_a_diagnostic(workspace, client_factory):
    ws, _ = workspace
    c = client_factory(ws, "--stdio")  # (what editors' clients pass)
    c.initialize(ws)
    broken = "import torch\ndef f(:\n    opt.zero_grad(set_to_none=False)\n"
    uri = c.open(ws / "broken.py", broken)
    # shown where it is, as an error, as `gpulint check` reports it (`invalid-syntax`)
    [d] = c.diagnostics(uri, version=1)
    assert (d["code"], d["severity"], d["range"]["start"]["line"]) == ("invalid-syntax", 1, 1)
    assert d["message"].startswith("SyntaxError: ") and "codeDescription" not in d
    (ws / "broken.py").write_text(broken)
    [checked] = json.loads(invoke(["check", "--output-format", "json", "broken.py"], cwd=ws).stdout)
    assert (checked["message"], checked["location"]["row"] - 1, checked["location"]["column"] - 1) == (
        d["message"], d["range"]["start"]["line"], d["range"]["start"]["character"])
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}
    assert c.code_actions(uri, whole) == []  # no fix and no noqa for a file that does not parse
    log = c.wait_for("window/logMessage", lambda p: "broken.py" in p["message"])
    assert "syntax error" in log["message"]
    nul = c.open(ws / "nul.py", "x = 1\x00\n")
    assert c.diagnostics(nul, version=1) == []
    # not Python: ignored; an unsaved buffer: linted
    toml = c.open(ws / "x.toml", "a = 1\n", language_id="toml")
    untitled = c.open(ws, DOC, uri="untitled:Untitled-1")
    assert [d["code"] for d in c.diagnostics(untitled)] == ["GPU203", "GPU302"]
    assert not any(n["params"].get("uri") == toml for n in c.notifications if "params" in n)
    # a document the client has not opened is never read from disk
    on_disk = ws / "on_disk.py"
    on_disk.write_text(DOC)
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 20, "character": 0}}
    assert c.code_actions(uri_of(on_disk), whole) == []
    c.notify("textDocument/didSave", {"textDocument": {"uri": uri_of(on_disk)}})
    # still serving: the broken document, repaired
    c.change(uri, "import torch\ndef f(opt):\n    opt.zero_grad(set_to_none=False)\n", 2)
    assert [d["code"] for d in c.diagnostics(uri, version=2)] == ["GPU302"]
    assert not any(n["params"].get("uri") == uri_of(on_disk) for n in c.notifications if "params" in n)
    assert c.shutdown_and_exit() == 0


@needs_pygls
def test_utf8_positions_and_crlf(workspace, client_factory, tmp_path):
    ws, _ = workspace
    c = client_factory(ws)
    init = c.initialize(ws, {"general": {"positionEncodings": ["utf-8", "utf-16"]}})
    assert init["capabilities"]["positionEncoding"] == "utf-8"
    uri = c.open(ws / "m.py", DOC)
    d203 = c.diagnostics(uri)[0]
    line = DOC.splitlines()[5]
    assert d203["range"]["start"]["character"] == len(line[: line.index("torch.arange")].encode("utf-8"))
    c.shutdown_and_exit()

    # CRLF: edits (in UTF-16 again) keep the document's line endings, as `gpulint fix` does
    crlf = (DOC + "\ndef g(opt):\n    loss_sum = 0\n").replace("\n", "\r\n")
    c = client_factory(ws)
    c.initialize(ws)
    uri = c.open(ws / "crlf.py", crlf)
    c.diagnostics(uri)
    (fix_all,) = c.code_actions(uri, {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                only=["source.fixAll.gpulint"])
    fixed = apply_text_edits(crlf, edits_of(fix_all["edit"], uri))
    assert fixed == gpulint_fix(tmp_path, "crlf.py", crlf) and "\n" not in fixed.replace("\r\n", "")
    assert c.shutdown_and_exit() == 0


@needs_pygls
def test_exit_without_shutdown_and_eof(workspace, client_factory):
    ws, _ = workspace
    c = client_factory(ws)
    c.initialize(ws)
    c.notify("exit")
    assert c.wait() == 1  # LSP: exit before shutdown is an error exit
    c = client_factory(ws)
    c.initialize(ws)
    c.proc.stdin.close()  # the editor went away
    assert c.wait() == 1


def test_server_without_pygls_says_how_to_install():
    code = "import sys; sys.modules['pygls'] = None; from gpulint.frontends.cli import main; main(['server'])"
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.strip().splitlines() == ["gpulint server: needs pygls; install it with: pip install 'gpulint[server]'"]


def test_check_does_not_import_pygls(tmp_path):
    (tmp_path / "a.py").write_text(CLEAN)
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPULINT_NO_CACHE="1")
    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "gpulint", "check", "a.py"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")]
    assert "gpulint.engine.lint" in imported  # the measurement works
    assert not [m for m in imported if m.split(".")[0] in ("pygls", "lsprotocol", "cattrs", "torch")]


# ------------------------------------------------------------------ core, in-process
@pytest.mark.parametrize("text", [
    "a = 'é😀x'\nb = 2\n",
    "a = 1\r\nb = 'ü'\r\n",
    "a = 1\rb = '😀'\rc",
    "\n\n",
    "x\x0cy = '€'\n",  # a form feed is not a line end in LSP
    "",
])
def test_line_index_round_trips(text):
    idx = LineIndex(text)
    for enc in (UTF8, UTF16, UTF32):
        for off in range(len(text) + 1):
            if text[off - 1 : off + 1] == "\r\n":
                continue  # between \r and \n is not a position
            line, char = idx.position(off, enc)
            assert idx.offset(line, char, enc) == off, (enc, off)
    # past the end of a line is its end; past the last line is the end of the text
    assert idx.offset(0, 10_000) == idx.content_end(0)
    assert idx.offset(10_000, 0) == len(text)


def test_code_units():
    assert [code_units("é😀", e) for e in (UTF8, UTF16, UTF32)] == [6, 3, 2]
    assert code_units("\ud800") == 1  # a lone surrogate (from JSON) does not crash


def test_form_feed_is_not_a_line_break():
    idx = LineIndex("x\x0cy = 1\nz\n")
    assert idx.position(3) == (0, 3)
    assert idx.position(8) == (1, 0)


def _noqa(text: str, tmp_path: Path):
    doc = DocumentLinter(cwd=str(tmp_path)).lint(text, str(tmp_path / "m.py"))
    assert doc.findings, doc.skipped
    return doc, [noqa_change(doc, f) for f in doc.findings]


def test_noqa_never_lands_inside_a_string_or_after_a_backslash(tmp_path):
    # the finding's line and its statement's first line both end inside a string:
    # no `# noqa` there can suppress it, so none is offered (the string stays as it is)
    text = textwrap.dedent('''\
        def step(opt):
            opt.zero_grad(set_to_none=False) if f("""a
        b""") else None
    ''')
    doc, (ch,) = _noqa(text, tmp_path)
    assert ch is None

    # the statement's first line ends inside a string, the finding's line does not
    text = textwrap.dedent('''\
        def step(opt):
            y = f("""a
        b""", opt.zero_grad(set_to_none=False))
    ''')
    doc, (ch,) = _noqa(text, tmp_path)
    out = apply_changes(text, [ch])
    assert out.splitlines()[1:] == ['    y = f("""a', 'b""", opt.zero_grad(set_to_none=False))  # noqa: GPU302']
    assert DocumentLinter(cwd=str(tmp_path)).lint(out, str(tmp_path / "m.py")).findings == []

    text = "def step(opt):\n    x = 1 + \\\n        opt.zero_grad(set_to_none=False)\n"
    doc, (ch,) = _noqa(text, tmp_path)
    out = apply_changes(text, [ch])
    assert out.splitlines()[1].endswith("\\")  # the continuation is intact
    assert DocumentLinter(cwd=str(tmp_path)).lint(out, str(tmp_path / "m.py")).findings == []


def test_diff_changes_rebuild_the_new_text():
    old = "a\nb\nc\nd\n"
    for new in ("a\nB\nc\nd\n", "a\nc\n", "x\na\nb\nc\nd\ny", "", "a\nb\nc\nd\n"):
        assert apply_changes(old, diff_changes(old, new)) == new
    assert diff_changes(old, old) == []


@needs_pygls
def test_server_bad_config_option_is_one_line(tmp_path):
    res = invoke(["server", "--config", str(tmp_path / "missing.toml")], cwd=tmp_path)
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [f"gpulint: error: {tmp_path / 'missing.toml'}: config file not found"]


@needs_pygls
def test_server_config_option_applies_to_every_document(workspace, client_factory, tmp_path):
    ws, _ = workspace
    (ws / "pyproject.toml").write_text('[tool.gpulint]\nignore = ["GPU302"]\n')
    other = tmp_path / "gpulint.toml"
    other.write_text('select = ["GPU302"]\n')
    c = client_factory(ws, "--config", str(other))
    c.initialize(ws)
    uri = c.open(ws / "m.py", DOC)
    assert [d["code"] for d in c.diagnostics(uri)] == ["GPU302"]
    assert c.shutdown_and_exit() == 0


# a helper module that a training loop in another file calls every step
WORKSPACE_PROJECT = {
    "util/meter.py": METER_PY,
    "util/scaler.py": SCALER_PY,
    "train.py": """\
        import torch
        from util.meter import Meter
        from util.scaler import Scaler


        def train(model, loader, optimizer):
            meter = Meter()
            scaler = Scaler()
            for x in loader:
                loss = model(x.cuda()).mean()
                scaler(loss, optimizer)
                meter.update(loss=loss)
    """,
}


@needs_pygls
def test_a_document_is_linted_as_a_file_of_the_workspace(client_factory, tmp_path):
    """util/meter.py alone calls nothing per step; in the workspace, train.py
    calls Meter.update every step of a training loop, so its `.item()` is
    reported, as `gpulint check .` reports it, once the server has read the
    workspace (in the background: the document is linted again then)."""
    ws = tmp_path / "ws"
    for rel, text in WORKSPACE_PROJECT.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(textwrap.dedent(text))
    res = invoke(["check", "--no-cache", "--output-format", "concise", "."], cwd=ws)
    assert f"util/meter.py:{METER_ITEM_ROW}:" in res.stdout.replace(os.sep, "/") and "GPU101" in res.stdout, res.stdout
    alone = invoke(["check", "--no-cache", "--output-format", "concise", "util/meter.py"], cwd=ws)
    assert "GPU101" not in alone.stdout  # linted alone, it knows none of its callers
    c = client_factory(ws)
    c.initialize(ws)
    meter = ws / "util" / "meter.py"
    uri = c.open(meter, meter.read_text())
    params = c.wait_for("textDocument/publishDiagnostics",
                        lambda p: p["uri"] == uri and any(d["code"] == "GPU101" for d in p["diagnostics"]))
    assert [(d["code"], d["range"]["start"]["line"]) for d in params["diagnostics"]] == [("GPU101", METER_ITEM_ROW - 1)]
    # the unsaved buffer of train.py, which no longer calls update, is what the project reads
    train = ws / "train.py"
    edited = train.read_text().replace("        meter.update(loss=loss)\n", "")
    assert edited != train.read_text()
    t = c.open(train, edited)
    c.diagnostics(t)
    c.change(uri, meter.read_text() + "\n", 2)
    assert c.diagnostics(uri, version=2) == []
    assert c.shutdown_and_exit() == 0


@needs_pygls
def test_a_notebook_is_linted_whole_and_each_cell_gets_its_diagnostics(workspace, client_factory, tmp_path):
    ws, _ = workspace
    c = client_factory(ws)
    result = c.initialize(ws, {"notebookDocument": {"synchronization": {}}})  # a client that syncs notebooks
    sync = result["capabilities"]["notebookDocumentSync"]
    assert sync["notebookSelector"][0]["notebook"] == "jupyter-notebook"
    nb_uri = uri_of(ws / "train.ipynb")
    cells = [
        ("markdown", "# Training\n"),
        ("python", "import torch\nfrom torch import nn\n%matplotlib inline\n"),
        ("python", "with torch.cuda.amp.autocast():\n    y = 1\nm = nn.DataParallel(net)\n"),
    ]
    cell_uris = [f"vscode-notebook-cell:{ws / 'train.ipynb'}#C{i}" for i in range(len(cells))]
    c.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": nb_uri, "notebookType": "jupyter-notebook", "version": 1, "cells": [
            {"kind": 1 if lang == "markdown" else 2, "document": u} for (lang, _), u in zip(cells, cell_uris)]},
        "cellTextDocuments": [{"uri": u, "languageId": lang, "version": 1, "text": text}
                              for (lang, text), u in zip(cells, cell_uris)],
    })
    got = {u: c.diagnostics(u) for u in cell_uris}
    assert got[cell_uris[0]] == [] and got[cell_uris[1]] == []
    # rows within the cell, as `gpulint check` reports the .ipynb (the IPython line of cell 2 is no error)
    assert sorted((d["code"], d["range"]["start"]["line"]) for d in got[cell_uris[2]]) == [("GPU001", 2),
                                                                                        ("GPU401", 0)]
    # a cell that stops parsing: one error diagnostic in that cell
    c.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb_uri, "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": cell_uris[2], "version": 2},
                                              "changes": [{"text": "def f(:\n    pass\n"}]}]}},
    })
    [d] = c.diagnostics(cell_uris[2])
    assert (d["code"], d["severity"], d["range"]["start"]["line"]) == ("invalid-syntax", 1, 0)
    c.notify("notebookDocument/didClose", {"notebookDocument": {"uri": nb_uri},
                                           "cellTextDocuments": [{"uri": u} for u in cell_uris]})
    assert c.diagnostics(cell_uris[2]) == []
    assert c.shutdown_and_exit() == 0


@needs_pygls
def test_unused_noqa_is_judged_against_the_workspace(client_factory, tmp_path):
    """helper.py's first `# noqa: GPU101` suppresses a sync that only
    train.py's loop makes per-step: once the workspace is read, only the
    second comment, which suppresses nothing anywhere, is reported."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text('[tool.gpulint]\nselect = ["GPU101", "GPU900"]\n')
    (ws / "helper.py").write_text(
        "import torch\n\n\ndef log_step(loss):\n    print(loss.item())  # noqa: GPU101\n\n\n"
        "def other(x):\n    return x + 1  # noqa: GPU101\n"
    )
    (ws / "train.py").write_text(
        "import torch\nfrom helper import log_step\n\n\ndef main(model, loader, opt):\n    for x, y in loader:\n"
        "        x, y = x.cuda(), y.cuda()\n        loss = model(x).sub(y).pow(2).mean()\n        log_step(loss)\n"
        "        loss.backward()\n        opt.step()\n\n\nif __name__ == '__main__':\n    main(None, [], None)\n"
    )
    c = client_factory(ws)
    c.initialize(ws)
    helper = ws / "helper.py"
    uri = c.open(helper, helper.read_text())
    params = c.wait_for("textDocument/publishDiagnostics",
                        lambda p: p["uri"] == uri and any(d["code"] == "GPU900" for d in p["diagnostics"]))
    assert [(d["code"], d["range"]["start"]["line"]) for d in params["diagnostics"]] == [("GPU900", 8)]
    assert c.shutdown_and_exit() == 0
