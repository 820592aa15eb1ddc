"""A small LSP client for the server tests: JSON-RPC 2.0 with Content-Length
framing over a subprocess's stdin/stdout. Every wait has a timeout, so a
server that hangs fails the test instead of blocking the run."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 30.0


class LspError(AssertionError):
    pass


def uri_of(path: Path) -> str:
    return Path(path).resolve().as_uri()


class LspClient:
    def __init__(self, cwd: Path, args: Sequence[str] = (), env: Optional[Dict[str, str]] = None) -> None:
        full_env = dict(os.environ)
        # the worktree's gpulint, whatever the cwd (which holds the user's code)
        full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gpulint", "server", *args],
            cwd=str(cwd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
        )
        self._next_id = 0
        self._inbox: "queue.Queue[Optional[dict]]" = queue.Queue()
        self.notifications: List[dict] = []  # every notification received, in order
        self._responses: Dict[int, dict] = {}
        self._stderr: List[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ------------------------------------------------------------ transport
    def _read(self) -> None:
        out = self.proc.stdout
        try:
            while True:
                headers = {}
                while True:
                    line = out.readline()
                    if not line:
                        self._inbox.put(None)
                        return
                    line = line.strip()
                    if not line:
                        break
                    k, _, v = line.decode("ascii").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = out.read(int(headers["content-length"]))
                self._inbox.put(json.loads(body.decode("utf-8")))
        except Exception as exc:  # pragma: no cover - reported by the waits
            self._inbox.put({"__reader_error__": repr(exc)})

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def _send(self, msg: dict) -> None:
        data = json.dumps(msg).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def _pump(self, deadline: float) -> bool:
        """Handle one incoming message; False when the stream ended."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise LspError(f"timed out waiting for the server; stderr:\n{self.stderr}")
        try:
            msg = self._inbox.get(timeout=left)
        except queue.Empty:
            raise LspError(f"timed out waiting for the server; stderr:\n{self.stderr}")
        if msg is None:
            return False
        if "__reader_error__" in msg:
            raise LspError(f"bad message from the server: {msg['__reader_error__']}")
        if "id" in msg and "method" in msg:  # a request from the server: answer it
            self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
        elif "id" in msg:
            self._responses[msg["id"]] = msg
        else:
            self.notifications.append(msg)
        return True

    # ------------------------------------------------------------ API
    def request(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        self._next_id += 1
        rid = self._next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while rid not in self._responses:
            if not self._pump(deadline):
                raise LspError(f"server ended before answering {method}; stderr:\n{self.stderr}")
        resp = self._responses.pop(rid)
        if "error" in resp:
            raise LspError(f"{method} failed: {resp['error']}")
        return resp.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, method: str, pred: Callable[[dict], bool] = lambda p: True, timeout: float = TIMEOUT) -> dict:
        """The params of the first not-yet-taken notification `method` that `pred` accepts."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for i in range(seen, len(self.notifications)):
                n = self.notifications[i]
                if n.get("method") == method and not n.get("_taken") and pred(n.get("params")):
                    n["_taken"] = True
                    return n["params"]
            seen = len(self.notifications)
            if not self._pump(deadline):
                raise LspError(f"server ended while waiting for {method}; stderr:\n{self.stderr}")

    def diagnostics(self, uri: str, version: Optional[int] = None, timeout: float = TIMEOUT) -> List[dict]:
        params = self.wait_for(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and (version is None or p.get("version") == version),
            timeout,
        )
        return params["diagnostics"]

    def initialize(self, root: Path, capabilities: Optional[dict] = None) -> dict:
        caps = capabilities if capabilities is not None else {
            "workspace": {"workspaceEdit": {"documentChanges": True}},
            "textDocument": {"codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "quickfix", "source", "source.fixAll"]}}}},
        }
        result = self.request("initialize", {
            "processId": os.getpid(), "rootUri": uri_of(root), "capabilities": caps,
            "workspaceFolders": [{"uri": uri_of(root), "name": root.name}],
        })
        self.notify("initialized", {})
        return result

    def open(self, path: Path, text: str, version: int = 1, language_id: str = "python", uri: Optional[str] = None) -> str:
        uri = uri or uri_of(path)
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language_id, "version": version, "text": text}})
        return uri

    def change(self, uri: str, text: str, version: int) -> None:
        self.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]})

    def code_actions(self, uri: str, rng: dict, diagnostics: Sequence[dict] = (), only: Optional[List[str]] = None,
                     trigger_kind: Optional[int] = None):
        ctx: Dict[str, Any] = {"diagnostics": list(diagnostics)}
        if only is not None:
            ctx["only"] = only
        if trigger_kind is not None:
            ctx["triggerKind"] = trigger_kind
        return self.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng, "context": ctx})

    def shutdown_and_exit(self, timeout: float = TIMEOUT) -> int:
        self.request("shutdown")
        self.notify("exit")
        return self.wait(timeout)

    def wait(self, timeout: float = TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LspError(f"the server did not exit within {timeout} s; stderr:\n{self.stderr}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


# ------------------------------------------------------------ applying edits
_LINE_END = re.compile(r"\r\n|\r|\n")


def offset_at(text: str, pos: dict) -> int:
    """Offset of an LSP position counted in UTF-16 code units (written here
    independently of the server's own conversion)."""
    starts = [0] + [m.end() for m in _LINE_END.finditer(text)]
    if pos["line"] >= len(starts):
        return len(text)
    start = starts[pos["line"]]
    units = 0
    k = start
    while units < pos["character"] and k < len(text) and text[k] not in "\r\n":
        units += 2 if ord(text[k]) > 0xFFFF else 1
        k += 1
    assert units == pos["character"] or k == len(text) or text[k] in "\r\n", "position inside a character"
    return k


def edits_of(edit: dict, uri: str) -> List[dict]:
    if edit.get("documentChanges"):
        (dc,) = [d for d in edit["documentChanges"] if d["textDocument"]["uri"] == uri]
        return dc["edits"]
    return edit["changes"][uri]


def apply_text_edits(text: str, edits: Sequence[dict]) -> str:
    """LSP semantics: every range refers to the original text; edits don't overlap."""
    spans = sorted(
        ((offset_at(text, e["range"]["start"]), offset_at(text, e["range"]["end"]), i, e["newText"])
         for i, e in enumerate(edits)),
    )
    out, pos = [], 0
    for start, end, _, new in spans:
        assert start >= pos, "overlapping edits"
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)
