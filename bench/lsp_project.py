"""Check that the editor server lints each file of a folder as `gpulint check .` does.

    python3 bench/lsp_project.py DIR [DIR ...]

For each folder: `gpulint check --no-cache .` run there (its JSON), then the
server's document linter (gpulint/frontends/server/core.py, with the folder
as its workspace) reads the workspace once and lints every file's text.
Prints, per folder, the files, the time of the workspace read, the files
whose findings differ from the CLI's (each difference listed), and the
median and slowest lint of one document. Exits 1 when any file differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def main(folders) -> int:
    from gpulint.frontends.server.core import DocumentLinter

    bad = 0
    for folder in folders:
        root = os.path.abspath(folder)
        proc = subprocess.run([sys.executable, "-m", "gpulint", "check", "--no-cache", "--exit-zero",
                               "--output-format", "json", "."], cwd=root, capture_output=True, text=True)
        cli = {}
        for f in json.loads(proc.stdout):
            cli.setdefault(os.path.join(root, f["filename"]), set()).add(
                (f["location"]["row"], f["location"]["column"], f["code"]))
        cwd = os.getcwd()
        os.chdir(root)
        try:
            linter = DocumentLinter(cwd=root, workspace=True)
            t = time.perf_counter()
            linter.read_workspace()
            read_s = time.perf_counter() - t
            files = linter.workspace_files()
            differ, times = 0, []
            for path in files:
                with open(path, encoding="utf-8", errors="surrogateescape") as fh:
                    text = fh.read()
                t = time.perf_counter()
                doc = linter.lint(text, path)
                times.append(time.perf_counter() - t)
                got = {(f.row, f.col, f.code) for f in doc.findings}
                want = cli.get(os.path.abspath(path), set())
                if not doc.skipped and got != want:
                    differ += 1
                    print(f"  {os.path.relpath(path, root)}: server only {sorted(got - want)}, "
                          f"check only {sorted(want - got)}")
        finally:
            os.chdir(cwd)
        times.sort() if times else times.append(0.0)
        print(f"{os.path.basename(root)}: {len(files)} files, workspace read {read_s:.1f} s, "
              f"{differ} files differ, one document {times[len(times) // 2] * 1000:.0f} ms median, "
              f"{times[-1] * 1000:.0f} ms slowest")
        bad += differ
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
