"""A finding in code that nothing in the project reaches is dropped, once, in
the engine (gpulint/engine/unreached.py on gpulint/model/project/reach.py);
whatever the check cannot tell stays reached."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from test_project import check, write

from gpulint.engine.unreached import scope_of
from gpulint.model.project.reach import PythonFile, Reach

LOSSES = """
    import torch


    class FocalLoss(torch.nn.Module):
        def forward(self, x):
            with torch.cuda.amp.autocast(enabled=False):
                return x.float().sum()


    class VarifocalLoss(torch.nn.Module):
        def forward(self, x):
            with torch.cuda.amp.autocast(enabled=False):
                return x.float().sum()


    def unused_helper(x):
        with torch.cuda.amp.autocast():
            return x


    def calls_the_unused_one(x):
        return unused_helper(x)
"""

TRAIN = """
    from losses import FocalLoss

    # VarifocalLoss() was tried here once
    criterion = FocalLoss()
"""


def _rows(root: Path):
    return {row for name, row, code in check(root, "--no-cache", "--select", "GPU401", ".") if name == "losses.py"}


def test_a_class_nothing_builds_and_a_function_nothing_calls_are_dead(tmp_path):
    write(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN})
    # FocalLoss is built by train.py; VarifocalLoss is named only in a comment;
    # unused_helper is called only by a function nothing calls
    assert _rows(tmp_path) == {7}


def test_a_name_in_a_config_or_a_string_reaches_the_code(tmp_path):
    write(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN,
                     "configs/loss.yaml": "loss:\n  _target_: losses.VarifocalLoss\n",
                     "registry.py": "HELPERS = {'calls_the_unused_one': None}\n"})
    assert _rows(tmp_path) == {7, 13, 18}


def test_a_docstring_or_a_string_standing_as_a_statement_reaches_nothing(tmp_path):
    # ElegantRL's `'''AgentTD3'''` above a class of another file, and the docstring of a
    # function that runs naming a loss: documentation, not a name looked up (a module's
    # own docstring still counts: it names the file's entry points)
    notes = (
        '"""Notes."""\n\n\n'
        "def f():\n"
        '    """Try VarifocalLoss here."""\n'
        "    return 1\n\n\n"
        "\'\'\'calls_the_unused_one\'\'\'\n"
        "f()\n"
    )
    write(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN, "notes.py": notes})
    assert _rows(tmp_path) == {7}
    write(tmp_path, {"notes.py": '"""Run VarifocalLoss."""\n'})
    assert _rows(tmp_path) == {7, 13}


def test_a_command_lines_help_text_reaches_nothing(tmp_path):
    # MTGNN's `--propalpha` is documented as `help='prop alpha'`: prose, not the class `prop`;
    # the same word as the option's value (`default='VarifocalLoss'`) may name it
    args = (
        "import argparse\n"
        "parser = argparse.ArgumentParser(description='VarifocalLoss study')\n"
        "parser.add_argument('--alpha', type=float, help='VarifocalLoss alpha')\n"
    )
    write(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN, "args.py": args})
    assert _rows(tmp_path) == {7}
    write(tmp_path, {"args.py": args + "parser.add_argument('--loss', default='VarifocalLoss')\n"})
    assert _rows(tmp_path) == {7, 13}


def test_an_import_alone_reaches_nothing_but_a_renamed_import_does(tmp_path):
    write(tmp_path, {"losses.py": LOSSES, "train.py": textwrap.dedent(TRAIN) + "from losses import VarifocalLoss\n"})
    assert _rows(tmp_path) == {7}
    write(tmp_path, {"train.py": textwrap.dedent(TRAIN) + "from losses import VarifocalLoss as VFL\nsecond = VFL()\n"})
    assert _rows(tmp_path) == {7, 13}


def test_an_installable_package_keeps_every_finding(tmp_path):
    # its users call what it never calls itself
    write(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN,
                     "pyproject.toml": "[project]\nname = 'losses'\nversion = '0'\n"})
    assert _rows(tmp_path) == {7, 13, 18}


def test_a_file_linted_alone_outside_a_work_tree_keeps_every_finding(tmp_path):
    write(tmp_path, {"losses.py": LOSSES})
    rows = {row for name, row, code in check(tmp_path, "--no-cache", "--select", "GPU401", "losses.py")}
    assert rows == {7, 13, 18}
    assert scope_of(str(tmp_path / "losses.py"), []) is None
    assert scope_of(str(tmp_path / "losses.py"), [str(tmp_path)]) == str(tmp_path)


def _reach(files):
    parsed = {k: PythonFile(ast.parse(textwrap.dedent(v)), k[:-3]) for k, v in files.items()}

    def files_with(word):
        return [("py", k) for k, v in files.items() if word in v]

    return Reach(files_with, parsed.get), parsed


def test_what_cannot_be_told_stays_reached():
    reach, parsed = _reach({"m.py": """
        import pytorch_lightning as pl
        import torch


        @register
        def decorated():
            pass


        class Model(pl.LightningModule):
            def training_step(self, batch):
                pass


        class Net(torch.nn.Module):
            def forward(self, x):
                pass

            def _hook(self):
                pass

            def never_called(self):
                pass


        def outer():
            def inner():
                pass
            return inner


        def dead_a():
            return dead_b()


        def dead_b():
            return dead_a()


        if __name__ == "__main__":
            net = Net()
            outer()
    """})
    pf = parsed["m.py"]
    line = {n.name: n.lineno for n in ast.walk(pf.tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert not reach.dead(pf, line["decorated"] + 1)  # a decorator may register it
    assert reach.dead(pf, line["training_step"] + 1)  # its class is built by nothing
    assert not reach.dead(pf, line["forward"] + 1)
    assert not reach.dead(pf, line["_hook"] + 1)
    assert reach.dead(pf, line["never_called"] + 1)
    assert not reach.dead(pf, line["inner"] + 1)
    assert reach.dead(pf, line["dead_a"] + 1) and reach.dead(pf, line["dead_b"] + 1)  # a cycle stays dead
    assert not reach.dead(pf, 1)  # top-level code runs


def test_a_module_nothing_imports_is_dead_only_where_the_project_has_a_script():
    # with no script, it is used from where the project cannot see (a harness, a notebook elsewhere)
    files = {"helpers.py": """
        def never_called_here():
            pass
    """, "models.py": "class Net:\n    pass\n"}
    reach, parsed = _reach(files)
    assert not reach.dead(parsed["helpers.py"], 3)
    files["train.py"] = "from models import Net\n\nif __name__ == '__main__':\n    Net()\n"
    reach, parsed = _reach(files)
    assert reach.dead(parsed["helpers.py"], 3)  # nothing imports it, and the project starts in train.py
    assert not reach.dead(parsed["models.py"], 2)
    files["train.py"] = "from helpers import something_else\n"
    reach, parsed = _reach(files)
    assert reach.dead(parsed["helpers.py"], 3)  # imported, and the function is used nowhere


def test_a_framework_method_of_a_built_class_is_reached():
    reach, parsed = _reach({"m.py": """
        import pytorch_lightning as pl


        class Model(pl.LightningModule):
            def training_step(self, batch):
                pass


        trainer.fit(Model())
    """})
    pf = parsed["m.py"]
    assert not reach.dead(pf, 6)


def test_a_git_work_tree_is_the_project_for_a_file_linted_alone_and_for_stdin(tmp_path):
    import json
    import os

    from click.testing import CliRunner

    from gpulint.frontends.cli import cli

    (tmp_path / ".git").mkdir()
    write(tmp_path, {"losses.py": "", "train.py": TRAIN})
    rows = {row for name, row, code in check(tmp_path, "--no-cache", "--select", "GPU401", "losses.py")}
    assert rows == set()  # the file on disk is empty
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        res = CliRunner().invoke(cli, ["check", "--no-cache", "--select", "GPU401", "--output-format", "json",
                                       "--stdin-filename", "losses.py", "-"], input=textwrap.dedent(LOSSES))
    finally:
        os.chdir(cwd)
    assert {f["location"]["row"] for f in json.loads(res.stdout)} == {7}  # the text read stands for the file
    write(tmp_path, {"losses.py": LOSSES})
    rows = {row for name, row, code in check(tmp_path, "--no-cache", "--select", "GPU401", "losses.py")}
    assert rows == {7}


def test_a_long_chain_of_uses_is_followed_or_given_up_as_reached():
    n = 3000  # deeper than the budget and than Python's recursion limit
    body = "".join(f"def f{i}():\n    return f{i + 1}()\n\n" for i in range(n)) + f"def f{n}():\n    return 0\n"
    files = {"chain.py": body, "train.py": "from chain import f1\n\nif __name__ == '__main__':\n    f1()\n"}
    reach, parsed = _reach(files)
    assert not reach.dead(parsed["chain.py"], 3 * n + 2)  # too far to tell: reached
    assert reach.dead(parsed["chain.py"], 2)  # f0: nothing calls it


def _select_gpu401(tmp_path):
    write(tmp_path, {"pyproject.toml": "[tool.gpulint]\nselect = ['GPU401']\npreview = true\n"})


def test_the_editor_server_drops_what_check_drops_and_sees_a_save(tmp_path):
    from gpulint.frontends.server.core import DocumentLinter

    (tmp_path / ".git").mkdir()
    _select_gpu401(tmp_path)
    write(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN})
    linter = DocumentLinter(cwd=str(tmp_path), workspace=True)
    linter.read_workspace()
    path = str(tmp_path / "losses.py")
    text = (tmp_path / "losses.py").read_text(encoding="utf-8")
    assert {f.row for f in linter.lint(text, path).findings} == _rows(tmp_path) == {7}
    # an unsaved buffer is read for its own text: a call added in it reaches the helper
    edited = text + "\n\nunused_helper(None)\n"
    assert {f.row for f in linter.lint(edited, path).findings} == {7, 18}
    # another file changed on disk counts once the server is told (a save)
    write(tmp_path, {"train.py": textwrap.dedent(TRAIN) + "second = VarifocalLoss()\n"})
    assert {f.row for f in linter.lint(text, path).findings} == {7}
    linter.forget_files()
    assert {f.row for f in linter.lint(text, path).findings} == {7, 13}


def test_the_flake8_plugin_drops_what_check_drops(tmp_path):
    from gpulint.frontends.flake8_plugin import Plugin

    (tmp_path / ".git").mkdir()
    write(tmp_path, {"losses.py": LOSSES, "train.py": TRAIN})
    Plugin.parse_options(None)
    source = (tmp_path / "losses.py").read_text(encoding="utf-8")
    rows = {r for r, _, text, _ in Plugin(ast.parse(source), source.splitlines(keepends=True),
                                          str(tmp_path / "losses.py")).run() if text.startswith("GPU401")}
    assert rows == {7}
    # outside a work tree it keeps every finding, as `gpulint check FILE` does
    other = tmp_path.parent / (tmp_path.name + "-alone")
    write(other, {"losses.py": LOSSES})
    Plugin.parse_options(None)
    rows = {r for r, _, text, _ in Plugin(ast.parse(source), source.splitlines(keepends=True),
                                          str(other / "losses.py")).run() if text.startswith("GPU401")}
    assert rows == {7, 13, 18}


# ------------------------------------------------------------ fixed parameters
ATTENTION = """
    import torch
    from torch import nn


    class Attention(nn.Module):
        def __init__(self, dim, add_zero_attn=False, layer_dropout=0.0):
            super().__init__()
            self.add_zero_attn = add_zero_attn
            self.layer_dropout = layer_dropout
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            if self.add_zero_attn:
                x = torch.cat([x, torch.zeros(x.shape[0], 1, x.shape[2])], dim=1)
            if self.training and self.layer_dropout > 0:
                keep = torch.rand(x.shape[0]) > self.layer_dropout
                x = x[keep.to(x.device)]
            return self.proj(x)


    class Switch(nn.Module):
        def __init__(self, approx=False):
            super().__init__()
            self.layer = Approx() if approx else Attention(8)

        def forward(self, x):
            return self.layer(x)


    class Approx(nn.Module):
        def forward(self, x):
            return x * torch.arange(x.shape[-1])
"""


def _gpu204(root: Path):
    return {row for name, row, code in check(root, "--no-cache", "--select", "GPU204", ".") if name == "layers.py"}


def test_a_branch_on_a_parameter_nothing_sets_is_dead(tmp_path):
    write(tmp_path, {"layers.py": ATTENTION,
                     "train.py": "from layers import Attention, Switch\n\nblock = Attention(8)\nnet = Switch()\n"})
    # add_zero_attn and layer_dropout keep their defaults, and `approx` never builds Approx
    assert _gpu204(tmp_path) == set()


def test_a_parameter_set_anywhere_keeps_its_branch(tmp_path):
    layers = {"layers.py": ATTENTION}
    every = {15, 17, 33}
    write(tmp_path, dict(layers, **{"train.py": "from layers import Attention, Switch\n\n"
                                                 "block = Attention(8, add_zero_attn=True, layer_dropout=0.1)\n"
                                                 "net = Switch(approx=True)\n"}))
    assert _gpu204(tmp_path) == every
    # a splat, a class handed on as a value, or a config naming the parameter: anything may come
    write(tmp_path, {"train.py": "from layers import Attention, Switch\n\nopts = {}\nblock = Attention(8, **opts)\n"
                                 "net = Switch(**opts)\n"})
    assert _gpu204(tmp_path) == every
    write(tmp_path, {"train.py": "from layers import Attention, Switch\nfrom functools import partial\n\n"
                                 "make = partial(Attention, 8)\nnet = partial(Switch)\n"})
    assert _gpu204(tmp_path) == every
    write(tmp_path, {"train.py": "from layers import Attention, Switch\n\nblock = Attention(8)\nnet = Switch()\n",
                     "config.yaml": "model:\n  add_zero_attn: true\n  layer_dropout: 0.1\n  approx: true\n"})
    assert _gpu204(tmp_path) == every
    # a README's prose sets nothing
    (tmp_path / "config.yaml").unlink()
    write(tmp_path, {"README.md": "Set add_zero_attn, layer_dropout or approx to taste.\n"})
    assert _gpu204(tmp_path) == set()


def test_a_fixed_value_flows_through_a_callers_own_fixed_parameter(tmp_path):
    write(tmp_path, {"layers.py": ATTENTION + """

    class Outer(nn.Module):
        def __init__(self, zero=False):
            super().__init__()
            self.inner = Attention(8, add_zero_attn=zero)
    """, "train.py": "from layers import Outer, Switch\n\nnet = Outer()\nother = Switch()\n"})
    assert _gpu204(tmp_path) == set()
    write(tmp_path, {"train.py": "from layers import Outer, Switch\n\nnet = Outer(zero=True)\nother = Switch()\n"})
    assert _gpu204(tmp_path) == {15}


def _shadow_rows(root: Path):
    return {row for name, row, code in check(root, "--no-cache", "--select", "GPU401", ".")
            if name == "losses.py" and "pkg" in str(root)}


def test_a_module_beside_a_package_of_its_own_name_never_runs(tmp_path):
    # `import pkg.losses` finds the package pkg/losses/, never pkg/losses.py,
    # so the stale file's FocalLoss is dead though train.py builds a FocalLoss
    files = {"pkg/__init__.py": "", "pkg/losses.py": LOSSES,
             "pkg/losses/__init__.py": "class FocalLoss:\n    pass\n",
             "train.py": "from pkg.losses import FocalLoss\n\ncriterion = FocalLoss()\n",
             # a link to the file shows it, it does not run it
             "README.md": "The losses are [here](https://github.com/a/b/blob/main/pkg/losses.py).\n"}
    write(tmp_path / "pkg-shadow", files)
    assert _shadow_rows(tmp_path / "pkg-shadow") == set()
    # in an installable package too: its users import the package as well
    write(tmp_path / "pkg-shadow", {"pyproject.toml": "[project]\nname = 'pkg'\nversion = '0'\n"})
    assert _shadow_rows(tmp_path / "pkg-shadow") == set()
    # not where it is a script, or a file of the project runs it
    write(tmp_path / "pkg-main", {**files, "pkg/losses.py": textwrap.dedent(LOSSES) + (
        "\nif __name__ == '__main__':\n    FocalLoss()\n")})
    assert _shadow_rows(tmp_path / "pkg-main") == {7}
    write(tmp_path / "pkg-run", {**files, "run.sh": "python pkg/losses.py --fast\n"})
    assert _shadow_rows(tmp_path / "pkg-run") == {7}
    write(tmp_path / "pkg-doc", {**files, "README.md": "Try it:\n\n    python3 -u pkg/losses.py\n"})
    assert _shadow_rows(tmp_path / "pkg-doc") == {7}
    # nor where the package is gone: the file is the module then (of an
    # installable package here, so every finding stays)
    (tmp_path / "pkg-shadow" / "pkg" / "losses" / "__init__.py").unlink()
    assert _shadow_rows(tmp_path / "pkg-shadow") == {7, 13, 18}


AGENT = """
    import torch


    class Agent:
        def __init__(self, net, opt):
            self.net, self.opt = net, opt

        def update(self, batches, log_writer=None):
            for x in batches:
                loss = self.net(x.cuda()).sum()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                if log_writer is not None:
                    log_writer.add_scalar("loss", loss.item())
"""


def _gpu101(root: Path):
    return {row for name, row, code in check(root, "--no-cache", "--preview", "--select", "GPU101", ".")
            if name == "agent.py"}


def test_a_caller_local_bound_once_to_a_constant_fixes_the_parameter(tmp_path):
    main = """
        import torch
        from agent import Agent


        def run(batches):
            net = torch.nn.Linear(4, 1).cuda()
            agent = Agent(net, torch.optim.SGD(net.parameters(), lr=0.1))
            writer = None  # SummaryWriter(output_dir)
            agent.update(batches, log_writer=writer)


        if __name__ == "__main__":
            run([torch.randn(2, 4) for _ in range(8)])
    """
    write(tmp_path, {"agent.py": AGENT, "main.py": main})
    assert _gpu101(tmp_path) == set()
    # bound twice (a writer when asked for), the branch may run
    write(tmp_path, {"main.py": textwrap.dedent(main).replace(
        "    writer = None  # SummaryWriter(output_dir)\n",
        "    writer = None\n    if batches:\n        writer = object()\n")})
    assert _gpu101(tmp_path) == {16}


ENGINE = """
    import torch


    def train_one_epoch(model, x):
        with torch.cuda.amp.autocast():
            return model(x)
"""


def test_a_name_counts_only_where_the_file_using_it_can_import_the_module(tmp_path):
    from test_project import rows_by_path

    # two copies of `engine.py` define `train_one_epoch`; the script imports the
    # one of `multi_utils`, so the Mask R-CNN copy under `detector/` never runs
    write(tmp_path, {
        "detector/train_utils/engine.py": ENGINE,
        "tracker/multi_utils/engine.py": ENGINE,
        "tracker/train.py": "from multi_utils.engine import train_one_epoch\n\n\n"
                            "if __name__ == '__main__':\n    train_one_epoch(None, None)\n",
    })
    assert rows_by_path(tmp_path, "GPU401") == [("tracker/multi_utils/engine.py", 6)]
    # a script that imports it from its package (which re-exports it), or by a
    # relative import inside the package, reaches it
    write(tmp_path, {"detector/train_utils/__init__.py": "from .engine import train_one_epoch\n",
                     "detector/run.py": "from train_utils import train_one_epoch\n\ntrain_one_epoch(None, None)\n"})
    assert rows_by_path(tmp_path, "GPU401") == [("detector/train_utils/engine.py", 6),
                                                 ("tracker/multi_utils/engine.py", 6)]
    (tmp_path / "detector/run.py").unlink()
    write(tmp_path, {"detector/train_utils/loop.py": "from . import engine\n\n\n"
                                                      "def main():\n    engine.train_one_epoch(None, None)\n",
                     "detector/go.py": "from train_utils.loop import main\n\nmain()\n"})
    assert rows_by_path(tmp_path, "GPU401") == [("detector/train_utils/engine.py", 6),
                                                 ("tracker/multi_utils/engine.py", 6)]
    # a name in a string (a registry, `getattr(module, "train_one_epoch")`) reaches it from anywhere
    (tmp_path / "detector/go.py").unlink()
    write(tmp_path, {"tracker/registry.py": "STEPS = {'epoch': 'train_one_epoch'}\n"})
    assert rows_by_path(tmp_path, "GPU401") == [("detector/train_utils/engine.py", 6),
                                                 ("tracker/multi_utils/engine.py", 6)]


def test_a_module_chosen_at_run_time_is_reached_where_the_script_can_import_it(tmp_path):
    from test_project import rows_by_path

    # the script puts `models/` on the search path and imports the model named on its
    # command line; the copies of the models saved under `log/` are never imported
    layers = ENGINE.replace("def train_one_epoch", "def group_all")
    model = "from layers import group_all\n\n\nclass get_model:\n    def run(self):\n        group_all(None, None)\n"
    write(tmp_path, {
        "models/layers.py": layers,
        "models/net.py": model,
        "log/run1/layers.py": layers,
        "log/run1/net.py": model,
        "train.py": "import importlib\nimport os\nimport sys\n\nsys.path.append(os.path.join('.', 'models'))\n\n\n"
                    "if __name__ == '__main__':\n    m = importlib.import_module(sys.argv[1])\n"
                    "    m.get_model().run()\n",
    })
    assert rows_by_path(tmp_path, "GPU401") == [("models/layers.py", 6)]
    # a literal module name is an import like any other: the chosen module alone is reached
    write(tmp_path, {"train.py": "import importlib\n\n\nif __name__ == '__main__':\n"
                                 "    m = importlib.import_module('elsewhere')\n    m.get_model().run()\n"})
    assert rows_by_path(tmp_path, "GPU401") == []

