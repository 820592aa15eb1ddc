"""GPU900: a suppression comment whose codes suppress nothing (Ruff's RUF100).

The engine decides which codes suppressed nothing (`Suppressions.unused`,
after the file's findings are suppressed); this rule words the finding and
builds the fix."""

from __future__ import annotations

from typing import List, Sequence

from gpulint.rule import SAFE, Edit, Example, Rule, UnusedCodes
from gpulint.source import Source


def removal(source: Source, comment_start: int, u: UnusedCodes) -> Edit:
    """The edit that takes the directive out of its comment: the whole line
    when the comment is alone on it and holds nothing else, the comment and
    the blanks before it when the code before it stays, else the directive
    alone (the rest of the comment is kept: `# noqa: GPU101  # why` becomes
    `# why`)."""
    text = source.text
    d0, d1 = comment_start + u.span[0], comment_start + u.span[1]
    comment_end = comment_start + len(u.comment)
    before, after = text[comment_start:d0], text[d1:comment_end]
    begin, next_line = source.offset(u.row, 0), source.offset(u.row + 1, 0)  # (the end of the text after the last line)
    if not before.strip() and not after.strip():
        if not text[begin:comment_start].strip():
            return Edit(begin, next_line, "")  # a comment line of its own: the line goes
        k = comment_start
        while k > begin and text[k - 1] in " \t":
            k -= 1
        return Edit(k, comment_end, "")
    rest = after.strip()
    if rest and not rest.startswith("#"):
        rest = "# " + rest  # `# noqa: GPU101 timing only` -> `# timing only`
    kept = before.rstrip()
    return Edit(comment_start, comment_end, f"{kept}  {rest}" if kept and rest else kept or rest)


def _plural(codes: Sequence[str]) -> str:
    return ", ".join(codes)


class UnusedNoqa(Rule):
    """
    ## What it does
    Flags the codes of a suppression comment that suppress nothing: a `#
    noqa: GPU101`, `# gpulint: ignore[host-sync-in-loop]` or file-level `#
    gpulint: noqa: GPU101` whose rule reports nothing there. This is Ruff's
    RUF100 for gpulint's codes.

    Only the codes of rules selected for the file are judged. A blanket `#
    noqa` and the codes of other tools (`# noqa: E501`) are left alone: they
    are for flake8 or Ruff. A comment that names this rule (`# noqa: GPU900`)
    keeps its other codes too.

    Many findings exist only when a file is linted with the rest of its
    project: a helper is flagged because another file's training loop calls
    it every step. So when this rule is selected, `gpulint check` reads every
    file of the project (the git work tree around the linted files, else the
    folder named on the command line, else the file's own folder), reports
    only the files asked for, and a comment is called unused only when the
    whole project gives it nothing to suppress. With pre-commit, which names
    only the changed files, each run then reads the whole project (the cache
    keeps it quick). The flake8 plugin and `--stdin-filename`, which see one
    file, do not report it; the language server reports it for the files of
    its workspace.

    ## Why is this bad?
    A suppression that suppresses nothing hides the next real finding on
    that line, and tells a reader that the line has a problem it no longer
    has.

    ## Fix safety
    The fix is safe: it removes only the codes that suppress nothing (the
    whole comment when it holds nothing else, the whole line when the comment
    is alone on it), and keeps the other codes and any text after them.

    ## References
    - [Ruff: unused-noqa (RUF100)](https://docs.astral.sh/ruff/rules/unused-noqa/)
    - [flake8: selecting and ignoring violations](https://flake8.pycqa.org/en/latest/user/violations.html)
    """

    code = "GPU900"
    name = "unused-noqa"
    message = "Unused suppression: {codes} reports nothing here"
    fix_safety = SAFE
    default = False
    judges_suppressions = True
    skips_test_files = False
    needles = ("noqa", "gpulint:")
    examples = (
        Example(
            bad="""
            import torch

            def train(model, loader, opt):
                for x, y in loader:
                    loss = model(x).sub(y).pow(2).mean()  # noqa: GPU101
                    loss.backward()
                    opt.step()
            """,
            good="""
            import torch

            def train(model, loader, opt):
                for x, y in loader:
                    loss = model(x).sub(y).pow(2).mean()
                    loss.backward()
                    opt.step()
            """,
            title="A `noqa` left behind after the sync it suppressed was removed",
            options={"with_codes": ("GPU101",)},
        ),
        Example(
            bad="""
            import torch

            def train(model, loader, opt):
                for x, y in loader:
                    x, y = x.cuda(), y.cuda()
                    loss = model(x).sub(y).pow(2).mean()
                    print(loss.item())  # noqa: E501, GPU101, GPU102
                    loss.backward()
                    opt.step()
            """,
            good="""
            import torch

            def train(model, loader, opt):
                for x, y in loader:
                    x, y = x.cuda(), y.cuda()
                    loss = model(x).sub(y).pow(2).mean()
                    print(loss.item())  # noqa: E501, GPU101
                    loss.backward()
                    opt.step()
            """,
            title="Only the unused code goes; the used one and another tool's stay",
            options={"with_codes": ("GPU101", "GPU102")},
        ),
    )

    def judge_suppressions(self, ctx, unused: List[UnusedCodes]) -> None:
        for u in unused:
            start = ctx.source.offset(u.row, 0) + u.col  # the comment's '#' (a character column)
            kept = [w for w in u.written if w not in u.unused]
            if kept:
                c0, c1 = start + u.codes_span[0], start + u.codes_span[1]
                edit = Edit(c0, c1, ", ".join(kept))
            else:
                edit = removal(ctx.source, start, u)
            fix = self.make_fix(f"Remove the unused {_plural(u.unused)}", [edit])
            ctx.report_span(self, start + u.span[0], start + u.span[1],
                            self.message.format(codes=_plural(u.unused)), fix)
