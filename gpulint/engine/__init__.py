"""The engine: from files to findings.

- `lint`: one source through the model and the selected rules (the findings
  of one file, with its suppressions);
- `files` and `notebook`: one file or notebook on disk, read and linted;
- `config`, `globs`, `discovery`: the settings of each file, and which files a run lints;
- `runner`: a run over many files as one project (the project's call graph
  joined to a fixpoint, and the cache in `cache`);
- `suppress`: `# noqa` and `# gpulint:` comments;
- `console`: what every command shares (rule codes given as options, colour).

The engine imports the rules and the model below it, never the fix layer or
a front end above it (docs/architecture.md).
"""
