"""Each rule's precision at first sight, the evidence behind its status.

A corpus is labelled at first sight: every finding of the code of that day
is judged before any rule is changed for it, and the labels are committed
before any tuning (bench/labels-NAME/NAME.csv, its first commit). This
script reads that first version of each corpus's labels from git, takes each
judged finding (TP or FP) with its verdict as the labels say today (a later
review may have corrected it), and sums them per rule:

- `right` / `judged`: findings right at first sight / findings judged;
- `pinned_out`: findings judged wrong only because the project pins a torch
  that lacks the fix's API (relabelled when gpulint came to read the
  project's torch pin, 41d35c9): the rules no longer report there, so they
  are out of scope, and shown apart;
- `corpora`: the corpora with at least one judged finding.

A rule may be stable only when, in scope, `right / judged >= 0.95` over at
least 30 judged findings from at least two corpora (`meets_bar`). The test
suite checks every stable rule against docs/first-sight.json.

    python3 bench/first_sight.py                 # print the table
    python3 bench/first_sight.py --write docs/first-sight.json
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the corpora labelled at first sight (the first one was labelled while the
# rules were written, so it is not first sight)
CORPORA = ("second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
           "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
           "seventeenth", "eighteenth", "nineteenth", "twentieth", "twenty-first", "twenty-second", "twenty-third", "twenty-fourth", "twenty-fifth", "twenty-sixth", "twenty-seventh", "twenty-eighth", "twenty-ninth", "thirtieth", "thirty-first", "thirty-second", "thirty-third", "thirty-fourth", "thirty-fifth", "thirty-sixth", "thirty-seventh", "thirty-eighth", "thirty-ninth", "fortieth", "forty-first", "forty-second", "forty-third", "forty-fourth", "forty-fifth", "forty-sixth", "forty-seventh", "forty-eighth", "forty-ninth", "fiftieth", "fifty-first", "fifty-second", "fifty-third")
BAR = {"precision": 0.95, "judged": 30, "corpora": 2}
PINNED_OUT = "when gpulint came to read the project's torch pin"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def first_version(name: str):
    """(commit, rows) of the corpus's labels as first committed."""
    rel = f"bench/labels-{name}/{name}.csv"
    commits = _git("log", "--diff-filter=A", "--format=%H", "--", rel).split()
    if not commits:
        raise SystemExit(f"{rel}: not in git history (a shallow clone?)")
    commit = commits[-1]
    return commit, list(csv.DictReader(io.StringIO(_git("show", f"{commit}:{rel}"))))


def evidence() -> dict:
    rules: dict = defaultdict(lambda: {"right": 0, "judged": 0, "pinned_out": 0, "per_corpus": {}})
    corpora = {}
    for name in CORPORA:
        commit, first = first_version(name)
        corpora[name] = commit[:12]
        today = {}
        with open(ROOT / "bench" / f"labels-{name}" / f"{name}.csv", newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                today[(r["package"], r["path"], r["line"], r["code"])] = r
        for r in first:
            if r["verdict"] not in ("TP", "FP"):
                continue
            now = today.get((r["package"], r["path"], r["line"], r["code"]), r)
            e = rules[r["code"]]
            c = e["per_corpus"].setdefault(name, [0, 0])
            if now["verdict"] == "FP" and PINNED_OUT in now["reason"]:
                e["pinned_out"] += 1
                continue
            right = now["verdict"] == "TP"
            e["judged"] += 1
            e["right"] += right
            c[0] += right
            c[1] += 1
    for e in rules.values():
        e["corpora"] = sorted(n for n, (_, judged) in e["per_corpus"].items() if judged)
        e["precision"] = round(e["right"] / e["judged"], 4) if e["judged"] else None
        e["meets_bar"] = meets_bar(e)
    return {"bar": BAR, "corpora": corpora, "rules": dict(sorted(rules.items()))}


def meets_bar(e: dict) -> bool:
    return (e["judged"] >= BAR["judged"] and len(e["corpora"]) >= BAR["corpora"]
            and e["right"] >= BAR["precision"] * e["judged"])


def render(ev: dict) -> str:
    lines = ["| rule | right / judged at first sight | precision | corpora | out of scope (pinned torch) | meets the bar |",
             "|---|---|---|---|---|---|"]
    for code, e in ev["rules"].items():
        p = "n/a" if e["precision"] is None else f"{100 * e['precision']:.1f}%"
        lines.append(f"| {code} | {e['right']} / {e['judged']} | {p} | {len(e['corpora'])} | {e['pinned_out']} |"
                     f" {'yes' if e['meets_bar'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", metavar="JSON", help="write the evidence here (docs/first-sight.json)")
    args = ap.parse_args(argv)
    ev = evidence()
    sys.stdout.write(render(ev))
    if args.write:
        Path(args.write).write_text(json.dumps(ev, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
