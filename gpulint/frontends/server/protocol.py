"""The Language Server (pygls): diagnostics on open / change / save, cleared
on close; code actions for each finding's fix, "Disable GPUxxx for this
line", and `source.fixAll.gpulint`.

Documents are synced in full (`TextDocumentSyncKind.Full`): the server holds
exactly the client's text, with no incremental patching whose line splitting
could disagree with the client's (pygls splits on form feeds and other
characters that LSP does not count as line ends). Positions are converted
here (gpulint.frontends.server.core.LineIndex), in the encoding negotiated at
`initialize` (UTF-16 unless the client offers UTF-8 or UTF-32).
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlparse

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from gpulint import __version__
from gpulint.rule import SAFE, Finding
from gpulint.frontends.server.core import (
    UTF8,
    UTF16,
    UTF32,
    DocumentLinter,
    LintedDocument,
    TextChange,
    fix_all_changes,
    fix_changes,
    noqa_change,
    ranges_overlap,
)

SOURCE = "gpulint"
FIX_ALL_KIND = "source.fixAll.gpulint"
FIX_ALL_TITLE = "Fix all gpulint safe fixes"
_ENCODINGS = {T.PositionEncodingKind.Utf8: UTF8, T.PositionEncodingKind.Utf16: UTF16, T.PositionEncodingKind.Utf32: UTF32}
_LINTED_SCHEMES = ("file", "untitled")


# Jupyter notebooks whose code cells are Python: linted as `gpulint check` lints the .ipynb
NOTEBOOK_SYNC = T.NotebookDocumentSyncOptions(notebook_selector=[T.NotebookDocumentFilterWithCells(
    cells=[T.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")])


class GpulintServer(LanguageServer):
    # didChange is linted this long after the last change: a burst of keystrokes
    # (or changes queued behind the lint of a large file) costs one lint, not one each
    debounce_s = 0.1

    def __init__(self, config: Optional[str] = None) -> None:
        super().__init__("gpulint", __version__, text_document_sync_kind=T.TextDocumentSyncKind.Full,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.config = config
        self.linter = DocumentLinter(config=config)
        self.documents: Dict[str, LintedDocument] = {}  # uri -> the lint of its current text
        self.shutdown_requested = False
        self._logged: Dict[str, str] = {}  # uri -> the last "not linted" reason logged
        self._shown_config_errors: set = set()
        self._pending: Dict[str, asyncio.TimerHandle] = {}  # uri -> its debounced lint

    # ------------------------------------------------------------ helpers
    @property
    def encoding(self) -> str:
        try:
            return _ENCODINGS.get(self.workspace.position_encoding, UTF16)
        except RuntimeError:  # not initialized yet
            return UTF16

    def log(self, message: str, kind: T.MessageType = T.MessageType.Log) -> None:
        self.window_log_message(T.LogMessageParams(type=kind, message=f"gpulint: {message}"))

    def _path_of(self, uri: str) -> Tuple[Optional[str], bool]:
        """(path used for config and per-file-ignores, whether it is a file on disk)."""
        path = to_fs_path(uri)
        if path is not None:
            return path, True
        root = self.linter.cwd
        name = urlparse(uri).path.rsplit("/", 1)[-1] or "untitled"
        return os.path.join(root, name if name.endswith((".py", ".pyi")) else name + ".py"), False

    def _wanted(self, uri: str, language_id: Optional[str]) -> bool:
        if urlparse(uri).scheme not in _LINTED_SCHEMES:
            return False  # notebook cells and virtual documents: a cell alone is not the program
        if language_id == "python":
            return True
        path = to_fs_path(uri) or ""
        return path.endswith((".py", ".pyi"))

    def open_document(self, uri: str):
        """The client's text of an open document; None for one not open (pygls
        would read it from disk, and only the editor's text is linted)."""
        return self.workspace.text_documents.get(unquote(uri))

    def overlays(self, uri: str) -> Dict[str, str]:
        """The other open Python documents on disk, path -> the editor's text:
        the project reads them instead of their disk copies."""
        out = {}
        for other in list(self.documents):
            td = self.open_document(other)
            path = to_fs_path(other) if other != uri else None
            if td is not None and path:
                out[path] = td.source
        return out

    def lint_uri(self, uri: str) -> Optional[LintedDocument]:
        td = self.open_document(uri)
        if td is None or not self._wanted(uri, td.language_id):
            return None
        path, on_disk = self._path_of(uri)
        doc = self.linter.lint(td.source, path, on_disk=on_disk, overlays=self.overlays(uri))
        self.documents[uri] = doc
        if doc.config_error and doc.config_error not in self._shown_config_errors:
            self._shown_config_errors.add(doc.config_error)
            self.window_show_message(T.ShowMessageParams(type=T.MessageType.Error, message=f"gpulint: {doc.config_error}"))
        if doc.skipped:
            if self._logged.get(uri) != doc.skipped:
                self._logged[uri] = doc.skipped
                self.log(f"{path}: no diagnostics: {doc.skipped}")
        else:
            self._logged.pop(uri, None)
        return doc

    def publish(self, uri: str, if_changed: bool = False) -> None:
        self.cancel_pending(uri)
        try:
            self._publish(uri, if_changed)
        except Exception as exc:  # a gpulint bug: logged, and the server goes on
            self.log(f"internal error while linting {uri}: {type(exc).__name__}: {exc} (please report this)",
                     T.MessageType.Error)

    def _publish(self, uri: str, if_changed: bool = False) -> None:
        before = self.documents.get(uri)
        doc = self.lint_uri(uri)
        if doc is None:
            return
        if if_changed and before is not None and before.text == doc.text and before.findings == doc.findings:
            return
        version = self.open_document(uri).version
        diagnostics = [self.diagnostic(doc, f) for f in doc.findings]
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def to_range(self, doc: LintedDocument, start: int, end: int) -> T.Range:
        (l1, c1), (l2, c2) = doc.index.position(start, self.encoding), doc.index.position(end, self.encoding)
        return T.Range(start=T.Position(line=l1, character=c1), end=T.Position(line=l2, character=c2))

    def diagnostic(self, doc: LintedDocument, f: Finding) -> T.Diagnostic:
        # a file that does not parse is an error (as `check` reports it: `invalid-syntax`)
        return T.Diagnostic(
            range=self.to_range(doc, *doc.span(f)),
            message=f.message,
            severity=T.DiagnosticSeverity.Error if f.is_diagnostic else T.DiagnosticSeverity.Warning,
            code=f.code,
            code_description=T.CodeDescription(href=f.url) if f.url else None,
            source=SOURCE,
        )

    def workspace_edit(self, uri: str, doc: LintedDocument, changes: List[TextChange]) -> T.WorkspaceEdit:
        edits = [T.TextEdit(range=self.to_range(doc, c.start, c.end), new_text=c.new_text) for c in changes]
        caps = self.client_capabilities.workspace
        document_changes = bool(caps and caps.workspace_edit and caps.workspace_edit.document_changes)
        if document_changes:
            td = self.open_document(uri)
            version = td.version if td is not None else None
            return T.WorkspaceEdit(document_changes=[
                T.TextDocumentEdit(text_document=T.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                                   edits=edits)
            ])
        return T.WorkspaceEdit(changes={uri: edits})

    def code_actions(self, params: T.CodeActionParams) -> List[T.CodeAction]:
        try:
            return self._code_actions(params)
        except Exception as exc:  # a gpulint bug: no actions, logged
            self.log(f"internal error in code actions: {type(exc).__name__}: {exc} (please report this)",
                     T.MessageType.Error)
            return []

    def _code_actions(self, params: T.CodeActionParams) -> List[T.CodeAction]:
        uri = params.text_document.uri
        td = self.open_document(uri)
        if td is None:
            return []
        doc = self.documents.get(uri)
        if doc is None or doc.text != td.source:
            doc = self.lint_uri(uri)
        if doc is None or doc.options is None:
            return []
        only = params.context.only

        def wanted(kind: str) -> bool:
            return not only or any(kind == k or kind.startswith(k + ".") for k in only)

        # the fix-all edit costs a lint per fix pass: computed when asked for by
        # kind, or on an explicit request, not for every automatic (lightbulb) one
        fix_all_wanted = wanted(FIX_ALL_KIND) and (
            bool(only) or params.context.trigger_kind != T.CodeActionTriggerKind.Automatic
        )

        enc = self.encoding
        r = params.range
        asked = (doc.index.offset(r.start.line, r.start.character, enc), doc.index.offset(r.end.line, r.end.character, enc))
        fixes: List[T.CodeAction] = []
        disables: List[T.CodeAction] = []
        if wanted(T.CodeActionKind.QuickFix):
            for f in doc.findings:
                if f.is_diagnostic or not ranges_overlap(doc.span(f), asked):
                    continue  # (no fix and no noqa for a file that does not parse)
                diag = [self.diagnostic(doc, f)]
                changes = fix_changes(doc, f)
                if changes:
                    safe = f.fix.applicability == SAFE
                    fixes.append(T.CodeAction(
                        title=f"gpulint ({f.code}): {f.fix.message}" + ("" if safe else " (unsafe)"),
                        kind=T.CodeActionKind.QuickFix,
                        diagnostics=diag,
                        is_preferred=safe,
                        edit=self.workspace_edit(uri, doc, changes),
                    ))
                noqa = noqa_change(doc, f)
                if noqa is not None:
                    disables.append(T.CodeAction(
                        title=f"Disable {f.code} for this line",
                        kind=T.CodeActionKind.QuickFix,
                        diagnostics=diag,
                        edit=self.workspace_edit(uri, doc, [noqa]),
                    ))
        actions = fixes + disables
        if fix_all_wanted:
            changes = fix_all_changes(doc)
            if changes:
                actions.append(T.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND,
                                            edit=self.workspace_edit(uri, doc, changes)))
        return actions

    def read_workspace_in_background(self) -> None:
        """Read the workspace's files for their summaries in a thread; then
        lint the open documents again, with the workspace's facts."""
        linter = self.linter
        if not linter.workspace:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a handler called directly): now
            linter.read_workspace()
            return

        def work() -> None:
            try:
                linter.read_workspace()
            except Exception as exc:  # a gpulint bug: logged, and documents keep their imports' facts
                loop.call_soon_threadsafe(self.log, f"internal error while reading the workspace: "
                                          f"{type(exc).__name__}: {exc} (please report this)", T.MessageType.Error)
                return
            loop.call_soon_threadsafe(self.publish_all)

        threading.Thread(target=work, name="gpulint-workspace", daemon=True).start()

    def publish_all(self) -> None:
        """Lint every open document again; publish those whose diagnostics changed."""
        for uri in list(self.documents):
            self.publish(uri, if_changed=True)

    def publish_soon(self, uri: str) -> None:
        self.cancel_pending(uri)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a handler called directly): now
            self.publish(uri)
            return
        self._pending[uri] = loop.call_later(self.debounce_s, self._publish_pending, uri)

    def _publish_pending(self, uri: str) -> None:
        self._pending.pop(uri, None)
        self.publish(uri)

    def publish_notebook(self, notebook_uri: str) -> None:
        """Lint an open notebook as a whole and publish each cell's diagnostics
        (rows within the cell) to that cell's document."""
        try:
            nb = self.workspace.get_notebook_document(notebook_uri=notebook_uri)
            if nb is None:
                return
            cells = []
            for cell in nb.cells:
                td = self.open_document(cell.document)
                cells.append((cell.kind == T.NotebookCellKind.Code, td.source if td is not None else ""))
            path = to_fs_path(notebook_uri) or os.path.join(self.linter.cwd, "notebook.ipynb")
            docs = self.linter.lint_notebook(cells, path)
            for i, cell in enumerate(nb.cells):
                doc = docs[i]
                self.documents[cell.document] = doc
                self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(
                    uri=cell.document, diagnostics=[self.diagnostic(doc, f) for f in doc.findings]))
            skipped = next((d.skipped for d in docs.values() if d.skipped), None)
            if skipped and self._logged.get(notebook_uri) != skipped:
                self._logged[notebook_uri] = skipped
                self.log(f"{path}: {skipped}")
        except Exception as exc:  # a gpulint bug: logged, and the server goes on
            self.log(f"internal error while linting {notebook_uri}: {type(exc).__name__}: {exc} (please report this)",
                     T.MessageType.Error)

    def cancel_pending(self, uri: str) -> None:
        handle = self._pending.pop(uri, None)
        if handle is not None:
            handle.cancel()

    def forget(self, uri: str) -> None:
        self.cancel_pending(uri)
        self.documents.pop(uri, None)
        self._logged.pop(uri, None)

    def clear(self, uri: str) -> None:
        """A document (or a notebook's cell) closed: forget it and clear its diagnostics."""
        self.forget(uri)
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def create_server(config: Optional[str] = None) -> GpulintServer:
    ls = GpulintServer(config)

    @ls.feature(T.INITIALIZE)
    def initialize(params: T.InitializeParams) -> None:
        root = ls.workspace.root_path
        if not root:
            folders = list(ls.workspace.folders.values())
            root = to_fs_path(folders[0].uri) if folders else None
        if root and os.path.isdir(root):
            ls.linter = DocumentLinter(cwd=root, config=ls.config, workspace=True)

    @ls.feature(T.INITIALIZED)
    def initialized(params: T.InitializedParams) -> None:
        ls.read_workspace_in_background()

    @ls.feature(T.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: T.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @ls.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: T.DidChangeTextDocumentParams) -> None:
        ls.publish_soon(params.text_document.uri)

    @ls.feature(T.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: T.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        # the config, or a file of the project whose summary the open documents read, changed
        ls.linter.forget_files()
        ls.publish(uri)
        for other in list(ls.documents):
            if other != uri:
                ls.publish(other)
        # a file new to the workspace is read when a document first needs it (cheap: the rest is in memory)

    @ls.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: T.DidCloseTextDocumentParams) -> None:
        ls.clear(params.text_document.uri)

    @ls.feature(T.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(params: T.DidOpenNotebookDocumentParams) -> None:
        ls.publish_notebook(params.notebook_document.uri)

    @ls.feature(T.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(params: T.DidChangeNotebookDocumentParams) -> None:
        ls.publish_notebook(params.notebook_document.uri)
        structure = params.change.cells.structure if params.change.cells else None
        for closed in (structure.did_close or []) if structure else []:  # cells deleted
            ls.clear(closed.uri)

    @ls.feature(T.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(params: T.DidSaveNotebookDocumentParams) -> None:
        ls.linter.forget_files()
        ls.publish_notebook(params.notebook_document.uri)

    @ls.feature(T.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(params: T.DidCloseNotebookDocumentParams) -> None:
        for cell in params.cell_text_documents:
            ls.clear(cell.uri)

    @ls.feature(
        T.TEXT_DOCUMENT_CODE_ACTION,
        T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix, FIX_ALL_KIND]),
    )
    def code_action(params: T.CodeActionParams) -> List[T.CodeAction]:
        return ls.code_actions(params)

    @ls.feature(T.SHUTDOWN)
    def shutdown(params) -> None:
        ls.shutdown_requested = True

    return ls
