"""The front ends: the ways a user runs gpulint.

- `cli`: the `gpulint` command (check, fix, rules, rule, bench, verify, doctor, server);
- `server`: the Language Server (`gpulint server`), for editors;
- `flake8_plugin`: the rules inside a flake8 run;
- `reporters`: the output formats of `gpulint check`;
- `docs`: the rule pages (docs/rules/), also shown by `gpulint rule CODE`.

They sit on top of everything else: the harness, the fix layer and the
engine below them never import a front end (docs/architecture.md).
"""
