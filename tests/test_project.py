"""The project layer: references, summaries, the call graph and its facts,
and linting a set of files as one program (gpulint/model/project/)."""

from __future__ import annotations

import ast
import json
import os
import textwrap
from pathlib import Path

from click.testing import CliRunner

from helpers import METER_ITEM_ROW, METER_PY, SCALER_PY, STEPPER

from gpulint.frontends.cli import cli
from gpulint.engine.lint import LintOptions, lint_module
from gpulint.model.project.facts import model_with_facts
from gpulint.model.project.graph import ProjectGraph
from gpulint.model.project.modules import module_names, resolve_from


def _summary(text: str, module: str = "m"):
    text = textwrap.dedent(text)
    tree = ast.parse(text)
    fa, summary, table = model_with_facts(tree, text, f"{module}.py", [module])
    return fa, summary, table


def _graph(files, rounds: int = 4):
    """{module: text} -> (ProjectGraph, {path: (names, summary)}), joined as
    the runner does: each file is read again with the project's facts until
    none changes."""
    texts = {f"{m}.py": textwrap.dedent(t) for m, t in files.items()}
    summaries = {path: ([path[:-3]], _summary(text, path[:-3])[1]) for path, text in texts.items()}
    graph = ProjectGraph(summaries)
    for _ in range(rounds):
        changed = False
        for path, text in texts.items():
            module = path[:-3]
            _, summary, _ = model_with_facts(ast.parse(text), text, path, [module], table=graph.facts_for(path))
            if summary != summaries[path][1]:
                summaries[path] = ([module], summary)
                changed = True
        if not changed:
            break
        graph = ProjectGraph(summaries)
    return graph, summaries


def write(root: Path, files) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def check(root: Path, *args: str):
    cwd = os.getcwd()
    os.chdir(root)
    try:
        res = CliRunner().invoke(cli, ["check", "--output-format", "json", *args])
    finally:
        os.chdir(cwd)
    assert res.exit_code in (0, 1), res.output
    return {(f["filename"].replace(os.sep, "/").split("/")[-1], f["location"]["row"], f["code"])
            for f in json.loads(res.stdout)}


def rows_by_path(root: Path, code: str):
    """(path below `root`, row) of each finding of `code` in `gpulint check .`, sorted."""
    cwd = os.getcwd()
    os.chdir(root)
    try:
        res = CliRunner().invoke(cli, ["check", "--no-cache", "--output-format", "json", "--select", code, "."])
    finally:
        os.chdir(cwd)
    return sorted((os.path.relpath(f["filename"], root).replace(os.sep, "/"), f["location"]["row"])
                  for f in json.loads(res.stdout))


# ------------------------------------------------------------------ modules
def test_module_names_and_relative_imports(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for p in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/mod.py"):
        (tmp_path / p).write_text("")
    names = module_names(str(tmp_path / "pkg" / "sub" / "mod.py"), [str(tmp_path)])
    assert names[0] == "pkg.sub.mod"
    assert module_names(str(tmp_path / "pkg" / "sub" / "__init__.py"), [str(tmp_path)])[0] == "pkg.sub"
    assert resolve_from("pkg.sub.mod", False, 1, "other") == "pkg.sub.other"
    assert resolve_from("pkg.sub.mod", False, 2, None) == "pkg"
    assert resolve_from("pkg.sub", True, 1, "mod") == "pkg.sub.mod"
    assert resolve_from("pkg", False, 3, "x") is None


def test_a_src_layout_is_named_below_src(tmp_path):
    (tmp_path / "src" / "lib").mkdir(parents=True)
    (tmp_path / "src" / "lib" / "__init__.py").write_text("")
    (tmp_path / "src" / "lib" / "train.py").write_text("")
    names = module_names(str(tmp_path / "src" / "lib" / "train.py"), [str(tmp_path), str(tmp_path / "src")])
    assert "lib.train" in names


# ---------------------------------------------------------------- summaries
def test_summary_kinds():
    _, summary, _ = _summary("""
        import torch
        from torch.utils.data import DataLoader

        def step(model, x, opt):
            loss = model(x).mean()
            loss.backward()
            opt.step()
            return loss.item()

        def epoch(model, loader, opt):
            for x in loader:
                step(model, x, opt)

        def batches(iterable, n):
            for b in iterable:
                yield b

        def make_loader(ds):
            return DataLoader(ds, batch_size=8)
    """)
    f = summary["functions"]
    assert f["m.step"]["steps"] and not f["m.step"]["drives"]
    assert f["m.step"]["returns"] == "number"
    # `epoch` drives a training loop: its step is a call of `step`, which the file's own graph knows
    assert not f["m.epoch"]["steps"] and f["m.epoch"]["drives"] is True
    assert ["m.step", "train"] in [c[:2] for c in f["m.epoch"]["calls"]]
    assert f["m.batches"]["iterates"] == 0
    assert f["m.make_loader"]["returns"] == "loader"
    assert f["m.step"]["params"] == ["model", "x", "opt"]


def test_a_loop_whose_step_is_in_a_helper_trains():
    fa, summary, table = _summary("""
        class NativeScaler:
            def __call__(self, loss, optimizer):
                loss.backward()
                optimizer.step()

        def train(model, loader, optimizer):
            loss_scaler = NativeScaler()
            for x in loader:
                loss = model(x)
                loss_scaler(loss, optimizer)
                print(loss.item())
    """)
    assert table["steps"] == ["m.NativeScaler.__call__"]
    loop = next(n for n in ast.walk(fa.tree) if isinstance(n, ast.For))
    assert fa.loops.is_training_step_loop(loop)
    call = next(n for n in ast.walk(loop) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "loss_scaler")
    assert fa.steps.helper_steps(call)


def test_a_generator_that_yields_its_argument_wraps_the_loader():
    fa, _, table = _summary("""
        class MetricLogger:
            def log_every(self, iterable, freq):
                for obj in iterable:
                    yield obj

        def train(model, data_loader, optimizer):
            logger = MetricLogger()
            for x in logger.log_every(data_loader, 10):
                model(x).backward()
    """)
    assert table["iterates"] == {"m.MetricLogger.log_every": 0}
    train = next(n for n in fa.tree.body if isinstance(n, ast.FunctionDef) and n.name == "train")
    loop = next(n for n in ast.walk(train) if isinstance(n, ast.For))
    base, _ = fa.values.unwrap(loop.iter)
    assert isinstance(base, ast.Name) and base.id == "data_loader"


def test_a_function_that_returns_a_loader_gives_one():
    fa, _, table = _summary("""
        import torch

        def build(ds):
            return torch.utils.data.DataLoader(ds, batch_size=4)

        def run(model, ds):
            train_batches = build(ds)
            for x in train_batches:
                model(x)
    """)
    assert table["returns"] == {"m.build": "loader"}
    loop = next(n for n in ast.walk(fa.tree) if isinstance(n, ast.For))
    assert fa.loops.loop_iterates_loader(loop, fa.index.ancestors(loop))


def test_the_class_a_parameter_holds_comes_from_its_callers():
    graph, _ = _graph({
        "scaler": """
            class NativeScaler:
                def __call__(self, loss, optimizer):
                    loss.backward()
                    optimizer.step()
        """,
        "engine": """
            def train_one_epoch(model, loader, optimizer, loss_scaler):
                for x in loader:
                    loss_scaler(model(x), optimizer)
        """,
        "main": """
            from scaler import NativeScaler
            from engine import train_one_epoch

            def main(model, loader, optimizer):
                s = NativeScaler()
                for epoch in range(3):
                    train_one_epoch(model, loader, optimizer, s)
        """,
    })
    assert graph.params["engine.train_one_epoch"] == {"loss_scaler": "scaler.NativeScaler"}


def test_every_step_follows_calls_and_stops_at_loop_drivers():
    graph, _ = _graph({
        "m": """
            import torch

            def log(x):
                print(x.item())

            def helper(loss):
                log(loss)

            def train(model, loader, opt):
                for x in loader:
                    loss = model(x)
                    loss.backward()
                    opt.step()
                    helper(loss)

            def validate(model, loader):
                for x in loader:
                    model(x)

            def main(model, tl, vl, opt):
                for epoch in range(10):
                    train(model, tl, opt)
                    validate(model, vl)
        """,
    })
    assert graph.every_step.get("m.helper") == "train"
    assert graph.every_step.get("m.log") == "train"  # through a helper
    assert "m.train" in graph.drives and "m.validate" in graph.drives
    assert "m.validate" not in graph.every_step  # an epoch loop around drivers is not a step loop
    assert "m.train" not in graph.every_step


def test_calls_under_an_option_do_not_make_the_callee_per_step():
    graph, _ = _graph({
        "m": """
            def log_lr(opt):
                print(opt.param_groups[0]["lr"])

            def train(model, loader, opt, args):
                for x in loader:
                    model(x).backward()
                    opt.step()
                    if args.log_lr:
                        log_lr(opt)
        """,
    })
    assert "m.log_lr" not in graph.every_step


def test_methods_resolve_through_base_classes():
    graph, _ = _graph({
        "base": """
            class Trainer:
                def train_step(self, batch):
                    self.loss(batch).backward()
                    self.optimizer.step()
        """,
        "sub": """
            from base import Trainer

            class MyTrainer(Trainer):
                def fit(self, loader):
                    for batch in loader:
                        self.train_step(batch)
        """,
    })
    assert graph.resolve("sub.MyTrainer.train_step") == "base.Trainer.train_step"
    assert graph.every_step.get("base.Trainer.train_step") == "train"


# --------------------------------------------------------------- the runner
PROJECT = {
    "util/misc.py": """
        import torch


        class MetricLogger:
            def update(self, **kwargs):
                for k, v in kwargs.items():
                    if isinstance(v, torch.Tensor):
                        v = v.item()
                    print(k, v)


        def all_reduce_mean(x):
            return x.item()


        def rarely(x, flag):
            if flag:
                return x.item()
            return x
    """,
    "util/scaler.py": """
        class NativeScaler:
            def __call__(self, loss, optimizer):
                loss.backward()
                optimizer.step()
    """,
    "engine.py": """
        import torch
        import util.misc as misc


        def train_one_epoch(model, data_loader, optimizer, device, loss_scaler):
            metric_logger = misc.MetricLogger()
            for samples in data_loader:
                loss = model(samples.to(device)).mean()
                loss_scaler(loss, optimizer)
                metric_logger.update(loss=loss)
                misc.all_reduce_mean(loss)
                misc.rarely(loss, False)
    """,
    "main.py": """
        from engine import train_one_epoch
        from util.scaler import NativeScaler


        def main(model, loader, optimizer):
            loss_scaler = NativeScaler()
            for epoch in range(10):
                train_one_epoch(model, loader, optimizer, "cuda", loss_scaler)
    """,
}


def test_a_sync_in_a_helper_of_another_file_is_found(tmp_path):
    write(tmp_path, PROJECT)
    found = check(tmp_path, "--no-cache", "--select", "GPU101", ".")
    assert ("misc.py", 9, "GPU101") in found  # MetricLogger.update, under an isinstance check
    assert ("misc.py", 14, "GPU101") in found  # all_reduce_mean
    assert not any(f[0] == "misc.py" and f[1] == 19 for f in found)  # under an option: not every step
    # the same file linted alone knows none of its callers
    alone = check(tmp_path, "--no-cache", "--select", "GPU101", "util/misc.py")
    assert alone == set()




def test_a_loader_over_an_array_a_helper_of_another_file_returns_is_in_memory(tmp_path):
    write(tmp_path, {
        "utils/windows.py": """
            import numpy as np


            def sub_sequences(x, seq_len):
                starts = np.arange(0, x.shape[0] - seq_len + 1)
                return np.array([x[i:i + seq_len] for i in starts])


            def folder(root):
                return ImageFolder(root)
        """,
        "train.py": """
            import torch
            from torch.utils.data import DataLoader
            from utils.windows import folder, sub_sequences


            def fit(model, optimizer, x, root):
                seqs = sub_sequences(x, 100)
                windows = DataLoader(seqs, batch_size=64, shuffle=True)
                images = DataLoader(folder(root), batch_size=64, shuffle=True)
                for batch in windows:
                    loss = model(batch.float().cuda()).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                for batch in images:
                    loss = model(batch.cuda()).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    })
    found = check(tmp_path, "--no-cache", "--select", "GPU202", ".")
    assert found == {("train.py", 10, "GPU202")}  # the folder's loader: the array's rows are in memory


def test_a_file_linted_alone_reads_the_files_it_imports(tmp_path):
    write(tmp_path, STEPPER)
    # the loop trains (its step is in helpers.py, not linted), so the read is GPU101's, not GPU104's
    found = check(tmp_path, "--no-cache", "--select", "GPU101,GPU104", "train.py")
    assert found == {("train.py", 11, "GPU101")}


def test_a_helper_without_any_step_word_is_summarized_when_per_step_code_calls_it(tmp_path):
    write(tmp_path, {
        "helpers.py": """
            def log_metrics(logs):
                for k, v in logs.items():
                    print(k, v.item())
        """,
        "train.py": """
            import torch
            from helpers import log_metrics


            def train(model, loader, opt):
                for x in loader:
                    loss = model(x.cuda())
                    loss.backward()
                    opt.step()
                    log_metrics({"loss": loss})
        """,
    })
    assert ("helpers.py", 4, "GPU101") in check(tmp_path, "--no-cache", "--select", "GPU101", ".")


def test_a_script_with_no_step_word_whose_loops_call_a_step_of_another_file_drives_them(tmp_path):
    """PyTorch-RL's ppo_gym.py: no `backward` or `.step(` in its own text,
    its minibatch loop calls `ppo_step` from core/ppo.py, and its outer
    iteration loop calls that function: the project reads the script in full
    (it imports a module that steps), and the loop of a light file's first
    reading does not make its caller one that steps."""
    files = {
        "core/__init__.py": "",
        "core/ppo.py": """
            def ppo_step(policy, optimizer, states):
                loss = policy(states).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """,
        "examples/ppo_gym.py": """
            import torch
            from core.ppo import ppo_step


            def update_params(batch):
                for _ in range(10):
                    for i in range(0, len(batch), 64):
                        ppo_step(policy_net, optimizer_policy, batch[i:i + 64])


            def main_loop():
                for i_iter in range(1000):
                    batch = agent.collect_samples(2048)
                    update_params(batch)
                    torch.cuda.empty_cache()
        """,
    }
    write(tmp_path, files)
    assert check(tmp_path, "--no-cache", "--select", "GPU103", ".") == set()
    summaries = {}
    for path, names in (("core/ppo.py", ["core.ppo"]), ("examples/ppo_gym.py", ["examples.ppo_gym"])):
        text = (tmp_path / path).read_text()
        _, summary, _ = model_with_facts(ast.parse(text), text, path, names)
        summaries[path] = (names, summary)
    calls = summaries["examples/ppo_gym.py"][1]["functions"]["examples.ppo_gym.update_params"]["calls"]
    assert [c[:2] for c in calls] == [["core.ppo.ppo_step", "loop"]]  # read alone: from a loop, not yet known
    graph = ProjectGraph(summaries)
    assert "examples.ppo_gym.update_params" not in graph.steps and "examples.ppo_gym.main_loop" not in graph.steps


def test_a_factory_that_builds_one_of_several_classes_gives_each(tmp_path):
    """IQ-Learn's `make_agent(env, args)`, in a package `__init__` with no
    word of a step or a device, returns a `SoftQ` or a `SAC` (classes with
    no base): the project reads it in full (it imports modules that step),
    and `agent.update(batch)` in the script's loop reaches both classes'
    `update`, whose reads run every training step."""
    agent = """
        import torch
        import torch.nn.functional as F


        class NAME(object):
            def __init__(self, args):
                self.critic = torch.nn.Linear(4, 1).cuda()
                self.opt = torch.optim.Adam(self.critic.parameters())

            def update(self, batch):
                return self.update_critic(batch)

            def update_critic(self, batch):
                loss = F.mse_loss(self.critic(batch), batch)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return {"loss": loss.item()}
    """
    files = {
        "agent/__init__.py": """
            from agent.sac import SAC
            from agent.softq import SoftQ


            def make_agent(env, args):
                if env.discrete:
                    agent = SoftQ(args)
                else:
                    agent = SAC(args)
                return agent
        """,
        "agent/sac.py": agent.replace("NAME", "SAC"),
        "agent/softq.py": agent.replace("NAME", "SoftQ"),
        "train.py": """
            from agent import make_agent


            def main(env, args, memory):
                agent = make_agent(env, args)
                for step in range(1000):
                    batch = memory.sample(64).cuda()
                    losses = agent.update(batch)
        """,
    }
    write(tmp_path, files)
    assert rows_by_path(tmp_path, "GPU101") == [("agent/sac.py", 19), ("agent/softq.py", 19)]


def test_a_factory_returning_a_tuple_and_a_head_chosen_as_a_function(tmp_path):
    """MetaOptNet: `(embedding_net, cls_head) = get_model(opt)`, where
    `get_model` builds each object of the tuple it returns in the branches
    of an `if` (`builds_each`), and `ClassificationHead.__init__` binds
    `self.head` to one of the file's functions by the base learner's name
    (`FileRefs.functions_held`): `cls_head(...)` in the script's loop runs
    `ClassificationHead.forward`, whose `self.head(...)` runs either head
    every training step. A tuple with a position the project does not know
    (`options`) gives the others all the same."""
    files = {
        "models/heads.py": """
            import torch
            import torch.nn as nn


            def one_hot(labels, depth):
                return torch.zeros(labels.size() + torch.Size([depth])).cuda().scatter_(1, labels.unsqueeze(1), 1)


            def ridge_head(query, support, labels, n_way):
                eye = torch.eye(support.size(1)).cuda()
                return query @ (support.transpose(1, 2) @ support + eye).inverse() @ one_hot(labels, n_way)


            def proto_head(query, support, labels, n_way):
                return query @ support.transpose(1, 2) @ one_hot(labels, n_way)


            class ClassificationHead(nn.Module):
                def __init__(self, base_learner="Proto"):
                    super().__init__()
                    if "Ridge" in base_learner:
                        self.head = ridge_head
                    else:
                        self.head = proto_head

                def forward(self, query, support, labels, n_way):
                    return self.head(query, support, labels, n_way)
        """,
        "models/embedding.py": """
            import torch.nn as nn


            class Embedding(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv2d(3, 64, 3)

                def forward(self, x):
                    return self.conv(x).flatten(2)
        """,
        "train.py": """
            import torch
            from models.embedding import Embedding
            from models.heads import ClassificationHead


            def get_model(options):
                network = Embedding().cuda()
                if options.head == "Ridge":
                    cls_head = ClassificationHead(base_learner="Ridge").cuda()
                else:
                    cls_head = ClassificationHead(base_learner="Proto").cuda()
                return (network, cls_head, options)


            def main(opt, loader):
                (embedding_net, cls_head, _) = get_model(opt)
                optimizer = torch.optim.SGD(list(embedding_net.parameters()) + list(cls_head.parameters()), lr=0.1)
                for support, query, labels in loader:
                    logits = cls_head(embedding_net(query.cuda()), embedding_net(support.cuda()), labels.cuda(), 5)
                    loss = logits.logsumexp(-1).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    }
    write(tmp_path, files)
    assert rows_by_path(tmp_path, "GPU203") == [("models/heads.py", 7), ("models/heads.py", 11)]


def test_a_checkpoint_loader_that_hands_back_the_model_keeps_its_class(tmp_path):
    """StyleSpeech's `model, D, G_optim, D_optim, step = load_checkpoint(path,
    model, D, G_optim, D_optim)`: the function returns the objects it is
    given (`builds_each`'s `=<position>:<name>`), so the rebinding holds the
    same model and `model(...)` in the loop still runs `Net.forward`, whose
    per-step read is reported. Bound to another name's object
    (`other, _ = load_checkpoint(path, model, ...)`) it is no such binding."""
    files = {
        "net.py": """
            import torch
            import torch.nn as nn


            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)

                def forward(self, x, lengths):
                    width = torch.max(lengths).item()
                    return self.fc(x[:, :width])
        """,
        "train.py": """
            import torch
            from net import Net


            def load_checkpoint(path, model, optimizer):
                state = torch.load(path)
                model.load_state_dict(state["model"])
                optimizer.load_state_dict(state["optim"])
                return model, optimizer, state["step"]


            def main(path, loader):
                model = Net().cuda()
                optimizer = torch.optim.Adam(model.parameters())
                model, optimizer, step = load_checkpoint(path, model, optimizer)
                for x, lengths in loader:
                    loss = model(x.cuda(), lengths.cuda()).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    }
    write(tmp_path, files)
    assert rows_by_path(tmp_path, "GPU101") == [("net.py", 12)]
    (tmp_path / "train.py").write_text((tmp_path / "train.py").read_text().replace(
        "model, optimizer, step = load_checkpoint(path, model, optimizer)",
        "model, optimizer, step = load_checkpoint(path, Net(), optimizer)"))
    assert rows_by_path(tmp_path, "GPU101") == []


def test_a_script_without_a_def_whose_loop_runs_whole_trainings_through_a_class_alias(tmp_path):
    """Informer's main_informer.py: no `def`, no step word; `Exp = Exp_Informer`
    at the top, then `for ii in range(args.itr): exp = Exp(args);
    exp.train(setting); torch.cuda.empty_cache()`. The alias names the class,
    whose `train` drives a loop of steps: the loop runs whole trainings, and
    emptying the cache once per training is no per-step cost. Without the
    alias (or the trainer), the same loop is still flagged."""
    trainer = """
        import torch


        class Exp_Informer:
            def __init__(self, args):
                self.model = torch.nn.Linear(4, 4).cuda()
                self.opt = torch.optim.Adam(self.model.parameters())

            def train(self, setting):
                for epoch in range(10):
                    for x, y in self.loader:
                        loss = (self.model(x.cuda()) - y.cuda()).pow(2).mean()
                        self.opt.zero_grad()
                        loss.backward()
                        self.opt.step()
    """
    script = """
        import argparse
        import torch
        from exp.exp_informer import Exp_Informer

        args = argparse.ArgumentParser().parse_args()
        Exp = Exp_Informer

        for ii in range(args.itr):
            exp = Exp(args)
            exp.train(str(ii))
            torch.cuda.empty_cache()
    """
    write(tmp_path / "a", {"exp/__init__.py": "", "exp/exp_informer.py": trainer, "main_informer.py": script})
    assert check(tmp_path / "a", "--no-cache", "--select", "GPU103", ".") == set()
    lonely = script.replace("from exp.exp_informer import Exp_Informer", "from exp.other import Exp_Informer")
    write(tmp_path / "b", {"exp/__init__.py": "", "exp/exp_informer.py": trainer, "main_informer.py": lonely})
    assert check(tmp_path / "b", "--no-cache", "--select", "GPU103", ".") == {("main_informer.py", 12, "GPU103")}
    # LTSF-Linear's run_longExp.py: the loop sits under a module-level `if args.is_training:`,
    # and `exp = Exp(args)` is bound in both branches, each time to the same class
    nested = script.replace("""
        for ii in range(args.itr):
            exp = Exp(args)
            exp.train(str(ii))
            torch.cuda.empty_cache()
    """, """
        if args.is_training:
            for ii in range(args.itr):
                exp = Exp(args)
                exp.train(str(ii))
                torch.cuda.empty_cache()
        else:
            exp = Exp(args)
            exp.train("0")
    """)
    assert nested != script
    write(tmp_path / "c", {"exp/__init__.py": "", "exp/exp_informer.py": trainer, "main_informer.py": nested})
    assert check(tmp_path / "c", "--no-cache", "--select", "GPU103", ".") == set()
    # Autoformer's run.py: the same, in a `def main():` whose own `Exp = Exp_Main` names the class
    in_main = """
        import argparse
        import torch
        from exp.exp_informer import Exp_Informer


        def main():
            args = argparse.ArgumentParser().parse_args()
            Exp = Exp_Informer
            for ii in range(args.itr):
                exp = Exp(args)
                exp.train(str(ii))
                torch.cuda.empty_cache()


        if __name__ == "__main__":
            main()
    """
    write(tmp_path / "d", {"exp/__init__.py": "", "exp/exp_informer.py": trainer, "main_informer.py": in_main})
    assert check(tmp_path / "d", "--no-cache", "--select", "GPU103", ".") == set()
    twice = in_main.replace("            Exp = Exp_Informer\n", "            Exp = Exp_Informer\n            Exp = pick(Exp)\n")
    assert twice != in_main  # bound twice: no longer known to name the class
    write(tmp_path / "e", {"exp/__init__.py": "", "exp/exp_informer.py": trainer, "main_informer.py": twice})
    assert check(tmp_path / "e", "--no-cache", "--select", "GPU103", ".") == {("main_informer.py", 14, "GPU103")}


def test_numbers_unpacked_from_a_step_function_that_returns_them_are_no_tensors(tmp_path):
    """pytorch-soft-actor-critic: `update_parameters` steps and returns
    `qf1_loss.item(), policy_loss.item()`, a tuple of host numbers (the
    summary's `returns`: HOST_NUMBERS); a caller that unpacks it holds
    numbers, whatever their names say (`critic_1_loss`), so logging them
    reads nothing on the device. The reads in the step function itself run
    every step of the script's loop."""
    sac = """
        import torch


        class SAC:
            def __init__(self):
                self.device = torch.device("cuda")

            def update_parameters(self, memory, batch_size):
                state = torch.as_tensor(memory.sample(batch_size)).to(self.device)
                qf1_loss = self.critic(state).pow(2).mean()
                policy_loss = self.policy(state).mean()
                self.critic_optim.zero_grad()
                (qf1_loss + policy_loss).backward()
                self.critic_optim.step()
                return qf1_loss.item(), policy_loss.item()
    """
    main = """
        import itertools
        from torch.utils.tensorboard import SummaryWriter
        from sac import SAC

        agent = SAC()
        writer = SummaryWriter()
        updates = 0
        for i_episode in itertools.count(1):
            done = False
            while not done:
                for i in range(8):
                    critic_1_loss, policy_loss = agent.update_parameters(memory, 256)
                    writer.add_scalar("loss/critic_1", critic_1_loss, updates)
                    writer.add_scalar("loss/policy", policy_loss, updates)
                    updates += 1
                done = env.step()
    """
    graph, summaries = _graph({"sac": sac, "main": main})
    assert summaries["sac.py"][1]["functions"]["sac.SAC.update_parameters"]["returns"] == "host_numbers"
    table = graph.facts_for("main.py")
    assert set(table["returns"].values()) == {"host_numbers"}
    text = textwrap.dedent(main)
    fa, _, _ = model_with_facts(ast.parse(text), text, "main.py", ["main"], table=table)
    name = next(n for n in ast.walk(fa.tree) if isinstance(n, ast.Name) and n.id == "critic_1_loss"
                and isinstance(n.ctx, ast.Load))
    assert fa.values.kind(name, fa.index.ancestors(name)) == "number"
    write(tmp_path, {"sac.py": sac, "main.py": main})
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("sac.py", 16, "GPU101")}


def test_a_number_at_one_place_of_a_returned_tuple_is_no_tensor_for_the_caller(tmp_path):
    """PointRCNN: `_train_it` steps and returns `loss.item(), tb_dict,
    disp_dict`, a tuple with a Python number at its first place only (the
    summary's `returns_items`); the caller that unpacks it holds a number in
    `loss`, so logging it reads nothing on the device. What the other places
    hold stays unknown."""
    trainer = """
        import torch


        class Trainer:
            def __init__(self, model, optimizer):
                self.model = model.cuda()
                self.optimizer = optimizer

            def _train_it(self, batch):
                loss, tb_dict, disp_dict = self.model(batch.cuda())
                loss.backward()
                self.optimizer.step()
                return loss.item(), tb_dict, disp_dict

            def _compute(self, batch, return_tensor=False):
                # (poutyne: a number only where an option says so, a tensor otherwise)
                loss = self.model(batch.cuda()).mean()
                if not return_tensor:
                    loss = float(loss.detach())
                loss.backward()
                self.optimizer.step()
                return loss, None
    """
    main = """
        from torch.utils.tensorboard import SummaryWriter
        from trainer import Trainer

        trainer = Trainer(model, optimizer)
        writer = SummaryWriter()
        for it, batch in enumerate(loader):
            loss, tb_dict, disp_dict = trainer._train_it(batch)
            writer.add_scalar("train_loss", loss, it)
    """
    graph, summaries = _graph({"trainer": trainer, "main": main})
    fsum = summaries["trainer.py"][1]["functions"]["trainer.Trainer._train_it"]
    assert fsum["returns_items"] == ["number", None, None] and "returns" not in fsum
    assert "returns_items" not in summaries["trainer.py"][1]["functions"]["trainer.Trainer._compute"]
    table = graph.facts_for("main.py")
    assert list(table["returns"].values()) == [["number", None, None]]
    text = textwrap.dedent(main)
    fa, _, _ = model_with_facts(ast.parse(text), text, "main.py", ["main"], table=table)
    kinds = {n.id: fa.values.kind(n, fa.index.ancestors(n)) for n in ast.walk(fa.tree)
             if isinstance(n, ast.Name) and n.id == "loss" and isinstance(n.ctx, ast.Load)}
    assert kinds == {"loss": "number"}
    write(tmp_path, {"trainer.py": trainer, "main.py": main})
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("trainer.py", 14, "GPU101")}


def test_a_model_a_helper_of_another_file_returns_in_eval_mode_is_evaluated(tmp_path):
    """weak-to-strong: `get_model` switches the model to eval mode and
    returns it (the summary's `returns_evaluated`); the caller that binds it
    holds a model in eval mode, so the helper it hands the model to runs an
    evaluation with autograd on (GPU501 there)."""
    models = """
        import torch
        from torch import nn


        def get_model(width):
            model = nn.Sequential(nn.Conv2d(3, width, 3), nn.Flatten())
            model.cuda()
            model.eval()
            return model
    """
    run = """
        import torch
        from models import get_model


        def get_embeddings(model, loader):
            out = []
            for x, _ in loader:
                out.append(model(x.cuda()))
            return torch.cat(out)


        def main(loader):
            weak = get_model(16)
            return get_embeddings(weak, loader)
    """
    graph, summaries = _graph({"models": models, "run": run})
    assert summaries["models.py"][1]["functions"]["models.get_model"]["returns_evaluated"] is True
    assert graph.facts_for("run.py")["returns_evaluated"] == ["models.get_model"]
    write(tmp_path, {"models.py": models, "run.py": run})
    assert check(tmp_path, "--no-cache", "--select", "GPU501", ".") == {("run.py", 9, "GPU501")}


def test_a_star_import_gives_torch_to_a_file_that_never_imports_it(tmp_path):
    write(tmp_path, {
        "utils/__init__.py": "from utils.torch import *\n",
        "utils/torch.py": "import torch\n",
        "train.py": """
            from utils import *

            device = torch.device("cuda")
            policy_net.to(device)
            optimizer = torch.optim.Adam(policy_net.parameters(), lr=3e-4)
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU405", ".") == {("train.py", 6, "GPU405")}


def test_the_cache_invalidates_the_files_that_depend_on_a_changed_summary(tmp_path):
    write(tmp_path, PROJECT)
    first = check(tmp_path, "--select", "GPU101", ".")
    assert ("misc.py", 14, "GPU101") in first
    assert check(tmp_path, "--select", "GPU101", ".") == first  # warm
    # the scaler no longer steps: the loop in engine.py is no training loop any more, and
    # misc.py, unchanged, must lose its findings (they depended on engine's and scaler's summaries)
    scaler = tmp_path / "util" / "scaler.py"
    scaler.write_text("class NativeScaler:\n    def __call__(self, loss, optimizer):\n        return loss\n")
    os.utime(scaler, ns=(1, 1))
    after = check(tmp_path, "--select", "GPU101", ".")
    assert not any(f[0] == "misc.py" for f in after), after
    # a change that leaves every summary as it was re-lints only that file, with the same results
    write(tmp_path, {"util/scaler.py": PROJECT["util/scaler.py"]})
    again = check(tmp_path, "--select", "GPU101", ".")
    assert again == first
    (tmp_path / "main.py").write_text((tmp_path / "main.py").read_text() + "\n# a comment\n")
    assert check(tmp_path, "--select", "GPU101", ".") == first


HOST_CALLERS = {
    "util/misc.py": """
        import torch


        class MetricLogger:
            def update(self, **kwargs):
                for k, v in kwargs.items():
                    if isinstance(v, torch.Tensor):
                        v = v.item()
                    print(k, v)
    """,
    "engine.py": """
        import torch
        import util.misc as misc


        def train_one_epoch(model, data_loader, optimizer, device):
            metric_logger = misc.MetricLogger()
            for samples in data_loader:
                loss = model(samples.to(device)).mean()
                loss.backward()
                optimizer.step()
                loss_value = loss.item()
                metric_logger.update(loss=loss_value)
                metric_logger.update(lr=optimizer.param_groups[0]["lr"])
    """,
}


def test_a_helper_whose_every_caller_passes_host_values_reads_no_tensor(tmp_path):
    write(tmp_path, HOST_CALLERS)
    found = check(tmp_path, "--no-cache", "--select", "GPU101", ".")
    assert ("engine.py", 12, "GPU101") in found  # the loss read itself
    assert not any(f[0] == "misc.py" for f in found)  # the isinstance branch never gets a tensor
    graph, _ = _graph({"util.misc": HOST_CALLERS["util/misc.py"], "engine": HOST_CALLERS["engine.py"]})
    assert graph.param_kinds["util.misc.MetricLogger.update"] == {"kwargs": "host_mapping"}


def test_one_caller_passing_a_tensor_or_unpacking_a_dict_keeps_the_read(tmp_path):
    for extra in ("metric_logger.update(acc=loss)", "metric_logger.update(**losses)"):
        files = dict(HOST_CALLERS)
        files["engine.py"] = files["engine.py"].rstrip() + "\n" + " " * 16 + "losses = {}\n" + " " * 16 + extra + "\n"
        write(tmp_path, files)
        found = check(tmp_path, "--no-cache", "--select", "GPU101", ".")
        assert ("misc.py", 9, "GPU101") in found, extra


def test_a_project_that_never_uses_an_accelerator_computes_on_the_cpu(tmp_path):
    cpu = {
        "algo.py": """
            def update(loss):
                print(loss.item())
        """,
        "train.py": """
            from algo import update


            def train(model, loader, optimizer):
                for x in loader:
                    loss = model(x).mean()
                    loss.backward()
                    optimizer.step()
                    update(loss)
        """,
    }
    write(tmp_path, cpu)
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == set()
    # the same project with one file that moves the model to the GPU
    write(tmp_path, {"main.py": """
        from train import train


        def main(model, loader, optimizer):
            train(model.cuda(), loader, optimizer)
    """})
    assert ("algo.py", 3, "GPU101") in check(tmp_path, "--no-cache", "--select", "GPU101", ".")


def test_an_epoch_loop_with_a_step_only_under_an_if_does_not_run_its_callees_every_step():
    graph, _ = _graph({"m": """
        class Model:
            def _get_loss(self):
                return self.loss.item()

            def fit(self, epochs, loader, optimizer):
                for epoch in epochs:
                    for x in loader:
                        did_step = self._step(x, optimizer)
                    if not did_step:
                        optimizer.step()  # the last, partial accumulation
                    self._get_loss()

            def _step(self, x, optimizer):
                x.backward()
                optimizer.step()
                return True
    """})
    assert "m.Model._step" in graph.every_step
    assert "m.Model._get_loss" not in graph.every_step  # once per epoch


def test_a_function_that_returns_a_host_tensor_gives_one(tmp_path):
    write(tmp_path, {
        "brain.py": """
            import torch


            class Brain:
                def fit_batch(self, batch):
                    loss = self.model(batch.cuda()).mean()
                    loss.backward()
                    self.optimizer.step()
                    return loss.detach().cpu()

                def fit(self, loader):
                    for batch in loader:
                        loss = self.fit_batch(batch)
                        if torch.isfinite(loss):
                            print(float(loss))
        """,
    })
    found = check(tmp_path, "--no-cache", "--select", "GPU101", ".")
    # the copy itself waits (line 10); what it returns lives in host memory: reading it waits for nothing
    assert found == {("brain.py", 10, "GPU101")}



def test_a_file_linted_alone_sees_a_change_in_a_file_it_imports_through_the_cache(tmp_path):
    write(tmp_path, STEPPER)
    first = check(tmp_path, "--select", "GPU101,GPU104", "train.py")
    assert first == {("train.py", 11, "GPU101")}
    assert check(tmp_path, "--select", "GPU101,GPU104", "train.py") == first  # warm: from the cache
    # helpers.py is not linted, only read for its summary: its stepper no longer steps
    helpers = tmp_path / "helpers.py"
    helpers.write_text("class Stepper:\n    def __call__(self, loss, opt):\n        return loss\n")
    os.utime(helpers, ns=(1, 1))
    assert check(tmp_path, "--select", "GPU101,GPU104", "train.py") == {("train.py", 11, "GPU104")}
    # a comment in the linted file: its summary and facts are as before
    train = tmp_path / "train.py"
    train.write_text(train.read_text() + "\n# a comment\n")
    assert check(tmp_path, "--select", "GPU101,GPU104", "train.py") == {("train.py", 11, "GPU104")}


# ------------------------------------------------------------------ one text in its project
def _linter_setup(tmp_path, files):
    from gpulint.engine.lint import LintOptions
    from gpulint.engine.project import ProjectLinter

    write(tmp_path, files)
    return ProjectLinter(), LintOptions(codes=("GPU101", "GPU104")), [str(tmp_path)]


def _rows(res):
    assert res.error is None, res.error
    return [(f.row, f.code) for f in res.findings]


def test_one_text_is_linted_with_the_files_it_imports_each_read_once(tmp_path, monkeypatch):
    """What the flake8 plugin and the language server lint with: the text,
    not the disk copy, with the summaries of the files it imports."""
    from gpulint.engine import project

    linter, options, roots = _linter_setup(tmp_path, STEPPER)
    train = str(tmp_path / "train.py")
    text = (tmp_path / "train.py").read_text()
    assert _rows(linter.lint(text, train, options, roots)) == [(11, "GPU101")]
    read = []
    real = project.lint_file
    monkeypatch.setattr(project, "lint_file", lambda p, *a, **k: read.append(p) or real(p, *a, **k))
    assert _rows(linter.lint(text, train, options, roots)) == [(11, "GPU101")]
    assert read == []  # helpers.py came from memory
    # an editor's buffer of helpers.py, without its step, is read instead of the disk
    helpers = str(tmp_path / "helpers.py")
    stepless = "class Stepper:\n    def __call__(self, loss, opt):\n        pass\n"
    assert (11, "GPU101") not in _rows(linter.lint(text, train, options, roots, overlays={helpers: stepless}))
    assert read == []
    # helpers.py changed on disk: read again
    (tmp_path / "helpers.py").write_text(stepless + "# changed\n")
    assert (11, "GPU101") not in _rows(linter.lint(text, train, options, roots))
    assert read == [helpers]


def test_one_text_sees_its_callers_in_the_extra_files(tmp_path):
    """A helper module linted alone knows none of its callers; with the
    workspace's files as `extra` (the language server's), it gets what
    `gpulint check .` gives it."""
    linter, options, roots = _linter_setup(tmp_path, PROJECT)
    misc = str(tmp_path / "util" / "misc.py")
    text = (tmp_path / "util" / "misc.py").read_text()
    assert _rows(linter.lint(text, misc, options, roots)) == []
    every = [str(p) for p in sorted(tmp_path.rglob("*.py"))]
    assert _rows(linter.lint(text, misc, options, roots, extra=every)) == [(9, "GPU101"), (14, "GPU101")]
    found = check(tmp_path, "--no-cache", "--select", "GPU101,GPU104", ".")
    assert {(r, c) for name, r, c in found if name == "misc.py"} == {(9, "GPU101"), (14, "GPU101")}
    # a text that does not parse is the result's error, as for a file
    res = linter.lint("def (:\n", misc, options, roots, extra=every)
    assert res.error is not None and res.findings == []



def test_objects_bound_by_unpacking_a_tuple_are_known(tmp_path):
    """`meter, scaler = Meter(), Scaler()` binds each name to its object, as
    two assignments would: the step in Scaler.__call__ makes the loop train,
    and Meter.update then runs every step."""
    write(tmp_path, {
        "util/meter.py": METER_PY,
        "util/scaler.py": SCALER_PY,
        "train.py": """
            import torch
            from util.meter import Meter
            from util.scaler import Scaler


            def train(model, loader, optimizer):
                meter, scaler = Meter(), Scaler()
                for x in loader:
                    loss = model(x.cuda()).mean()
                    scaler(loss, optimizer)
                    meter.update(loss=loss)
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101,GPU104", ".") == {("meter.py", METER_ITEM_ROW, "GPU101")}
    # unpacked from anything but a tuple of the same length, nothing is known
    text = (tmp_path / "train.py").read_text().replace("Meter(), Scaler()", "make()")
    (tmp_path / "train.py").write_text(text.replace("import torch\n", "import torch\nfrom util.parts import make\n"))
    assert check(tmp_path, "--no-cache", "--select", "GPU101,GPU104", ".") == set()


def test_a_helper_the_project_runs_every_step_is_repeated_code(tmp_path):
    """GPU203 in a helper named like nothing per-step, whose caller is a
    training loop in another file (hifi-gan's mel_spectrogram); not where
    the tensor is cached under the key the guard tests."""
    write(tmp_path, {
        "audio.py": """
            import torch

            window = {}
            cached = {}


            def spectrogram(y, n):
                if n not in window:
                    window[str(y.device)] = torch.hann_window(n).to(y.device)
                if n not in cached:
                    cached[n] = torch.hann_window(n).to(y.device)
                return torch.stft(y, n, window=window[str(y.device)])
        """,
        "train.py": """
            import torch
            from audio import spectrogram


            def train(model, loader, opt):
                for y in loader:
                    y = y.cuda()
                    loss = (model(spectrogram(y, 1024)) ** 2).mean()
                    loss.backward()
                    opt.step()
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU203", ".") == {("audio.py", 10, "GPU203")}
    # linted alone, nothing says that spectrogram runs more than once
    assert check(tmp_path, "--no-cache", "--select", "GPU203", "audio.py") == set()


def test_a_step_with_micro_batches_inside_is_one_step_not_an_epoch():
    # improved-diffusion's TrainLoop: run_step calls forward_backward, whose loop over
    # slices of the batch runs backward, then the optimizer step; run_loop's loop trains
    graph, _ = _graph({"m": """
        class TrainLoop:
            def run_loop(self):
                while True:
                    batch = next(self.data)
                    self.run_step(batch)

            def run_step(self, batch):
                self.forward_backward(batch)
                self.optimize()

            def forward_backward(self, batch):
                for i in range(0, batch.shape[0], self.microbatch):
                    loss = self.model(batch[i: i + self.microbatch]).mean()
                    loss.backward()

            def optimize(self):
                self._log_grad_norm()
                self.opt.step()

            def _log_grad_norm(self):
                total = 0.0
                for p in self.params:
                    total += (p.grad ** 2).sum().item()
                print(total)
    """})
    assert "m.TrainLoop.run_step" in graph.steps
    assert "m.TrainLoop.run_step" not in graph.drives  # it steps: a call of it is one step
    assert "m.TrainLoop.forward_backward" in graph.drives  # a loop of its own, as before
    assert graph.every_step.get("m.TrainLoop.run_step") == "train"
    assert graph.every_step.get("m.TrainLoop._log_grad_norm") == "train"


def test_a_function_with_a_loop_of_its_own_still_drives_when_it_steps_elsewhere():
    graph, _ = _graph({"m": """
        def train_epoch(model, loader, opt):
            for x in loader:
                model(x).backward()
                opt.step()

        def fit(model, loader, opt):
            for epoch in range(10):
                train_epoch(model, loader, opt)
    """})
    assert "m.train_epoch" in graph.drives
    assert "m.train_epoch" not in graph.every_step


A2C_PPO = {
    # the layout of pytorch-a2c-ppo-acktr-gail: the algorithm in a file with no device
    # word, re-exported by its package, picked in one of two branches of main.py
    "algo/__init__.py": """
        from .a2c import A2C
        from .ppo import PPO
    """,
    "algo/a2c.py": """
        class A2C:
            def update(self, rollouts):
                loss = self.model(rollouts).mean()
                loss.backward()
                self.optimizer.step()
    """,
    "algo/ppo.py": """
        class PPO:
            def update(self, rollouts):
                total = 0.0
                for epoch in range(self.ppo_epoch):
                    for sample in rollouts.batches():
                        loss = self.model(sample).mean()
                        loss.backward()
                        self.optimizer.step()
                        total += loss.item()
                return total
    """,
    "main.py": """
        import torch
        import algo


        def main(args, model, rollouts, envs):
            model.to("cuda")
            if args.algo == "a2c":
                agent = algo.A2C(model)
            else:
                agent = algo.PPO(model)
            for j in range(args.updates):
                with torch.no_grad():
                    action = model.act(rollouts.obs[-1])
                rollouts.insert(*envs.step(action))
                agent.update(rollouts)
    """,
}


def test_package_re_exports_and_objects_of_several_classes_resolve(tmp_path):
    write(tmp_path, A2C_PPO)
    found = check(tmp_path, "--no-cache", "--select", "GPU101", ".")
    assert found == {("ppo.py", 10, "GPU101")}
    # without the file that uses the GPU, the algorithm computes on the CPU
    (tmp_path / "main.py").write_text(textwrap.dedent(A2C_PPO["main.py"]).replace('model.to("cuda")', "pass"))
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == set()


def test_graph_reads_package_exports_and_union_calls():
    from gpulint.model.project.exports import exports_summary

    init = exports_summary(ast.parse(textwrap.dedent(A2C_PPO["algo/__init__.py"])), "algo")
    assert init["exports"] == {"A2C": "algo.a2c.A2C", "PPO": "algo.ppo.PPO"}
    main_text = textwrap.dedent(A2C_PPO["main.py"])
    _, main_summary, _ = model_with_facts(ast.parse(main_text), main_text, "main.py", ["main"])
    refs = [c[0] for c in main_summary["functions"]["main.main"]["calls"]]
    assert "algo.A2C.update" in refs and "algo.PPO.update" in refs  # agent holds one of two classes
    ppo_text = textwrap.dedent(A2C_PPO["algo/ppo.py"])
    _, ppo_summary, _ = model_with_facts(ast.parse(ppo_text), ppo_text, "algo/ppo.py", ["algo.ppo"])
    assert ppo_summary.get("host_only") is True
    graph = ProjectGraph({"algo/__init__.py": (["algo"], init), "main.py": (["main"], main_summary),
                          "algo/ppo.py": (["algo.ppo"], ppo_summary)})
    assert graph.resolve("algo.PPO.update") == "algo.ppo.PPO.update"
    assert graph.device_side == {"algo.ppo.PPO.update"}
    assert graph.facts_for("algo/ppo.py")["device_side"] == ["algo.ppo.PPO.update"]
    # a package that re-exports a module under its own name resolves to nothing, without looping
    loop = ProjectGraph({"x/__init__.py": (["x"], {"functions": {}, "exports": {"x": "x.x"}})})
    assert loop.resolve("x.x.f") is None


def test_a_returned_parameter_is_not_a_loader_by_its_name():
    _, summary, _ = _summary("""
        from torch.utils.data import DataLoader

        class DataSpec:
            def __init__(self, dataloader):
                self.dataloader = dataloader

        def ensure_data_spec(dataloader):
            if not isinstance(dataloader, DataSpec):
                dataloader = DataSpec(dataloader)
            return dataloader

        def build_loader(ds):
            loader = DataLoader(ds, batch_size=8)
            return loader
    """)
    assert "returns" not in summary["functions"]["m.ensure_data_spec"]
    assert summary["functions"]["m.build_loader"]["returns"] == "loader"


def test_layers_of_imported_models_reach_the_training_file_and_the_cache_follows_them(tmp_path):
    from test_rule_gpu403 import DCGAN, TRAIN_SCRIPT, VIT

    from gpulint.model.project.facts import partial_summary

    # a models file with nothing that steps: only the layers its classes build are summarized
    part = partial_summary(ast.parse(DCGAN), DCGAN, ["models"], False)
    # (and what it imports, where the models it builds may have more layers)
    # (and what its code builds, and its classes' bases, where a subclass of a trainer builds its model)
    assert part == {"functions": {}, "imports": ["torch", "torch.nn"], "uses": {}, "partial": True, "methods": ["forward"],
                    "cudnn": 3,  # (it names convolutions and defines modules: `layers.cudnn_words`)
                    "classes": {"models.Discriminator": ["torch.nn.Module"], "models.Generator": ["torch.nn.Module"]},
                    "layers": {"conv": 4, "matmul": 2, "attention": 0},  # by call site: `block` has one Conv2d
                    "class_layers": {"Discriminator": {"conv": 1, "matmul": 1, "attention": 0},
                                     "Generator": {"conv": 3, "matmul": 1, "attention": 0}}}
    # not asked yet: what it imports (whether it imports a training file), nothing more
    assert partial_summary(ast.parse(DCGAN), DCGAN, ["models"], False, layers=False) == {
        "functions": {}, "classes": {}, "imports": ["torch", "torch.nn"], "partial": True, "methods": ["forward"],
        "cudnn": 3}
    assert partial_summary(ast.parse("x = 1\n"), "x = 1\n", ["m"], False) is None
    write(tmp_path, {"models.py": DCGAN, "train.py": "import torch\nfrom models import *\n" + TRAIN_SCRIPT})
    assert check(tmp_path, "--select", "GPU403", ".") == set()
    # the models become a ViT's attention: the cached finding of train.py must follow
    write(tmp_path, {"models.py": VIT + "\n\nGenerator = Discriminator = Attention\n"})
    assert check(tmp_path, "--select", "GPU403", ".") == {("train.py", 9, "GPU403")}


def test_a_models_file_asked_for_its_layers_is_read_for_them_only_and_keeps_its_findings(tmp_path, monkeypatch):
    from test_rule_gpu403 import TRAIN_SCRIPT, VIT

    import gpulint.engine.lint as lint

    models = VIT.replace("        return self.proj(attn @ v)", "        return self.proj(attn @ v) + torch.ones(1)")
    models += "\n\nGenerator = Discriminator = Attention\n"
    # (the classes are looked up by name, so no call of the training loop resolves into the models
    # file: it is read for its layers only; `from models import *` would resolve them)
    head = "import torch\nimport models\nGenerator, Discriminator = (getattr(models, n) for n in ('Generator', 'Discriminator'))\n"
    write(tmp_path, {"models.py": models, "train.py": head + TRAIN_SCRIPT.lstrip("\n")})
    walked = []
    real = lint._lint_tree
    monkeypatch.setattr(lint, "_lint_tree", lambda text, path, *a: walked.append(os.path.basename(path)) or real(text, path, *a))
    found = check(tmp_path, "--no-cache", "-j", "1", "--select", "GPU204,GPU403", ".")
    # the layers reach the training file, and the models file's own finding stands
    assert found == {("models.py", 16, "GPU204"), ("train.py", 9, "GPU403")}
    # the rules walked the models file once: the project's second reading, for its layers, ran
    # none (the training file is read again, with the layers)
    assert walked.count("models.py") == 1 and walked.count("train.py") == 2


def test_a_trainer_handed_its_model_by_a_script_with_no_def_knows_its_layers(tmp_path):
    """A script with no def (read for its imports only) that builds the model
    and hands it to a training function of another file (Swin-Unet's
    `train.py` and `trainer.py`): the trainer knows the model's layers."""
    from test_rule_gpu403 import VIT

    trainer = """
        import torch

        def trainer_main(model, loader):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
    """
    script = """
        import torch
        from models import Attention
        from trainer import trainer_main

        if __name__ == "__main__":
            net = Attention().cuda()
            trainer_main(net, torch.load("data.pt"))
    """
    write(tmp_path, {"models.py": VIT, "trainer.py": textwrap.dedent(trainer), "train.py": textwrap.dedent(script)})
    assert check(tmp_path, "--no-cache", "--select", "GPU403", ".") == {("trainer.py", 10, "GPU403")}
    # without the script, which model the trainer trains is not known
    (tmp_path / "train.py").unlink()
    assert check(tmp_path, "--no-cache", "--select", "GPU403", ".") == set()


def test_a_helper_in_another_file_that_builds_on_the_host_is_summarized_when_a_forward_moves_its_result(tmp_path):
    # demucs: `create_sin_embedding` (a file with no device word, no step) builds a table on the
    # CPU; the model's forward moves it every step. The project asks for the helper's summary.
    helpers = """
        import torch


        def create_sin_embedding(length, dim, max_period=10000):
            pos = torch.arange(length).view(-1, 1)
            adim = torch.arange(dim // 2).view(1, -1)
            phase = pos / (max_period ** (adim / (dim // 2 - 1)))
            return torch.cat([torch.cos(phase), torch.sin(phase)], dim=-1)


        def lengths_of(sequences):
            out = torch.empty(len(sequences), dtype=torch.long)
            for i, s in enumerate(sequences):
                out[i] = len(s)
            return out
    """
    model = """
        from torch import nn
        from helpers import create_sin_embedding, lengths_of


        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 8)

            def forward(self, x, sequences):
                pe = create_sin_embedding(x.shape[1], x.shape[2]).to(x.device)
                n = lengths_of(sequences).to(x.device)
                return self.lin(x + pe), n
    """
    train = """
        import torch
        from model import M

        model = M().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, s in loader:
            loss = model(x.cuda(), s)[0].mean()
            loss.backward()
            opt.step()
    """
    write(tmp_path, {"helpers.py": helpers, "model.py": model, "train.py": train})
    assert rows_by_path(tmp_path, "GPU203") == [("model.py", 12)]
    # the helper alone: a function of tensor code, left for the project to ask about
    res = lint_module(textwrap.dedent(helpers), "helpers.py", LintOptions(codes=()))
    assert res.deferred and res.summary is not None and res.summary.get("imports_only")


def test_a_star_re_export_of_a_package_reaches_the_helper_it_names(tmp_path):
    # RT-DETR: `from ..misc import MetricLogger` where misc/__init__.py says `from .logger import *`;
    # MetricLogger.update reads each loss on the host, every step
    write(tmp_path, {
        "src/__init__.py": "",
        "src/misc/__init__.py": "from .logger import *\n",
        "src/misc/logger.py": """
            import torch


            class MetricLogger(object):
                def update(self, **kwargs):
                    for k, v in kwargs.items():
                        if isinstance(v, torch.Tensor):
                            v = v.item()
        """,
        "src/solver/__init__.py": "",
        "src/solver/engine.py": """
            import torch
            from ..misc import MetricLogger


            def train_one_epoch(model, criterion, loader, optimizer, device):
                logger = MetricLogger()
                for samples, targets in loader:
                    loss = criterion(model(samples.to(device)), targets)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    logger.update(loss=loss)
        """,
    })
    assert rows_by_path(tmp_path, "GPU101") == [("src/misc/logger.py", 9)]
    g = ProjectGraph({
        "src/misc/__init__.py": (["src.misc"], {"functions": {}, "star_exports": ["src.misc.logger"]}),
        "src/misc/logger.py": (["src.misc.logger"], {"functions": {"src.misc.logger.MetricLogger.update": {}}}),
    })
    assert g.resolve("src.misc.MetricLogger.update") == "src.misc.logger.MetricLogger.update"
    assert g.resolve("src.misc.Missing.update") is None


def test_a_module_name_two_folders_define_resolves_beside_the_importer(tmp_path):
    # saint: `from augmentations import mixup_data` in train.py and in old_version/train.py,
    # each beside its own augmentations.py
    helper = """
        import torch


        def mixup(x):
            for i in range(3):
                print(x.item())
    """
    train = """
        import torch
        from augmentations import mixup


        def train(model, loader, opt):
            model.cuda()
            for x in loader:
                loss = model(x).mean()
                loss.backward()
                opt.step()
                mixup(loss)
    """
    write(tmp_path, {"augmentations.py": helper, "train.py": train,
                     "old_version/augmentations.py": helper, "old_version/train.py": train})
    found = rows_by_path(tmp_path, "GPU101")
    assert found == [("augmentations.py", 7), ("old_version/augmentations.py", 7)]  # both copies
    g = ProjectGraph({
        "a/m.py": (["a.m", "m"], {"functions": {"a.m.f": {}}}),
        "b/m.py": (["b.m", "m"], {"functions": {"b.m.f": {}}}),
    })
    assert g.resolve_in("m.f", "b/train.py") == "b.m.f" and g.resolve_in("m.f", "a/x.py") == "a.m.f"


def test_namespace_packages_and_scripts_of_the_same_name_in_two_folders(tmp_path):
    # tab-ddpm: CTAB-GAN/ and CTAB-GAN-Plus/ each hold model/synthesizer/{trainer,transformer}.py,
    # with no __init__.py, run from their top folder (`from model.synthesizer.transformer import ...`)
    helper = """
        import torch


        class Padder:
            def pad(self, data):
                return torch.zeros((len(data), 4)).to(data.device)
    """
    trainer = """
        import torch
        from model.synthesizer.transformer import Padder


        class Trainer:
            def fit(self, model, loader, opt):
                self.padder = Padder()
                for x in loader:
                    loss = model(self.padder.pad(x.cuda())).mean()
                    loss.backward()
                    opt.step()
    """
    files = {}
    for top in ("CTAB-GAN", "CTAB-GAN-Plus"):
        files[f"{top}/model/synthesizer/transformer.py"] = helper
        files[f"{top}/model/synthesizer/trainer.py"] = trainer
    write(tmp_path, files)
    names = module_names(str(tmp_path / "CTAB-GAN" / "model" / "synthesizer" / "transformer.py"), [str(tmp_path)])
    assert names == ["transformer", "synthesizer.transformer", "model.synthesizer.transformer"]
    found = rows_by_path(tmp_path, "GPU203")
    # each trainer's loop reaches its own folder's helper (both trainers are `trainer.Trainer.fit`)
    assert found == [("CTAB-GAN-Plus/model/synthesizer/transformer.py", 7),
                     ("CTAB-GAN/model/synthesizer/transformer.py", 7)]


def test_functions_of_the_same_qualified_name_in_two_files_are_both_in_the_graph():
    g = ProjectGraph({
        "a/train.py": (["train"], {"functions": {"train.fit": {"drives": True, "calls": [["util.f", "train"]]}}}),
        "b/train.py": (["train"], {"functions": {"train.fit": {"drives": True, "calls": [["util.f", "train"]]}}}),
        "a/util.py": (["util"], {"functions": {"util.f": {}}}),
        "b/util.py": (["util"], {"functions": {"util.f": {}}}),
    })
    ids = {g.id_of(p, q) for p, q in (("a/train.py", "train.fit"), ("b/train.py", "train.fit"))}
    assert len(ids) == 2 and all(i in g.functions for i in ids)
    for path in ("a/util.py", "b/util.py"):
        assert g.facts_for(path)["every_step"] == {"util.f": "train"}, path


def test_a_model_called_in_the_loop_runs_its_forward_and_what_that_calls_every_step(tmp_path):
    write(tmp_path, {
        "train.py": """
            import torch
            from models import Net


            def main(loader):
                model = Net().cuda()
                model = torch.nn.parallel.DistributedDataParallel(model)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    loss = model(x.cuda()).sum()
                    loss.backward()
                    opt.step()
        """,
        # no device word, no step: read only because the loop calls into it
        "models.py": """
            import torch.nn as nn
            import utils


            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(3, 3)

                def forward(self, x):
                    return self.lin(x) + utils.offsets(x)
        """,
        "utils.py": """
            import torch


            def offsets(x):
                return torch.zeros(x.shape[0], 3).to(x.device)
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU203", ".") == {("utils.py", 6, "GPU203")}


def test_a_submodule_a_model_holds_runs_every_step_through_its_attribute(tmp_path):
    # `self.reg(x, d)` with `self.reg = Regulator()` calls Regulator's forward, in
    # both branches of `if self.training:`; the model reaches the loop wrapped in
    # DataParallel and rebound by `.train()` (FastSpeech's LengthRegulator)
    write(tmp_path, {
        "train.py": """
            import torch
            from model import Net


            def main(loader):
                model = torch.nn.DataParallel(Net()).to("cuda")
                model = model.train()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, d in loader:
                    loss = model(x.cuda(), d.cuda()).sum()
                    loss.backward()
                    opt.step()
        """,
        "model.py": """
            from torch import nn
            from modules import Regulator


            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.reg = Regulator()
                    self.lin = nn.Linear(3, 3)

                def forward(self, x, d):
                    if self.training:
                        out = self.reg(self.lin(x), d)
                    else:
                        out = self.reg(x, d)
                    return out
        """,
        # no step word and no device word: read because the model's forward calls into it
        "modules.py": """
            from torch import nn


            class Regulator(nn.Module):
                def expand(self, x, d):
                    return x[:, : int(d.sum().cpu())]

                def forward(self, x, d):
                    return self.expand(x, d)
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("modules.py", 7, "GPU101")}


def test_a_model_a_trainer_holds_in_self_runs_its_forward_every_step(tmp_path):
    # `self.model = Regulator().cuda()` in the trainer's `__init__`: a Regulator
    write(tmp_path, {
        "trainer.py": """
            import torch
            from modules import Regulator


            class Trainer:
                def __init__(self):
                    self.model = Regulator().cuda()
                    self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

                def fit(self, loader):
                    for x, d in loader:
                        loss = self.model(x.cuda(), d.cuda()).sum()
                        loss.backward()
                        self.opt.step()
        """,
        "modules.py": """
            import torch
            from torch import nn


            class Regulator(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(4, 4)

                def forward(self, x, d):
                    return self.lin(x)[:, : int(d.sum().item())]
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("modules.py", 12, "GPU101")}


def test_a_model_a_project_factory_builds_runs_its_forward_every_step(tmp_path):
    # `model = build_model().cuda()`, where build_model (a file of its own, with no
    # step word, read because the training function calls it) returns a Regulator:
    # the loop's `model(...)` runs Regulator.forward
    write(tmp_path, {
        "train.py": """
            import torch
            from factory import build_model


            def main(loader):
                model = build_model().cuda()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, d in loader:
                    loss = model(x.cuda(), d.cuda()).sum()
                    loss.backward()
                    opt.step()
        """,
        "factory.py": """
            import torch
            from modules import Regulator


            def build_model(small=False):
                net = Regulator(torch.float32)
                return net
        """,
        "modules.py": """
            import torch
            from torch import nn


            class Regulator(nn.Module):
                def __init__(self, dtype):
                    super().__init__()
                    self.lin = nn.Linear(4, 4, dtype=dtype)

                def forward(self, x, d):
                    return self.lin(x)[:, : int(d.sum().item())]
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("modules.py", 12, "GPU101")}
    # a factory whose returns build different things builds nothing known
    write(tmp_path, {"factory.py": textwrap.dedent('''
        import torch
        from modules import Regulator


        def build_model(small=False):
            if small:
                return torch.nn.Linear(4, 4)
            return Regulator(torch.float32)
    ''')})
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == set()


def test_the_distributed_path_of_a_per_step_helper_runs_every_step(tmp_path):
    # MAE's util/misc.py: the read is on the path of a distributed run, in a block that returns
    write(tmp_path, {
        "misc.py": """
            import torch
            import torch.distributed as dist


            def all_reduce_mean(x):
                world_size = dist.get_world_size()
                if world_size > 1:
                    x_reduce = torch.tensor(x).cuda()
                    dist.all_reduce(x_reduce)
                    return x_reduce.item()
                else:
                    return x


            def maybe_log(x, verbose):
                if verbose:
                    return x.item()  # an option: not every step
        """,
        "train.py": """
            import torch
            import misc


            def train(model, loader, opt, verbose):
                for x in loader:
                    loss = model(x.cuda()).mean()
                    loss.backward()
                    opt.step()
                    misc.all_reduce_mean(loss.detach())
                    misc.maybe_log(loss, verbose)
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("misc.py", 11, "GPU101")}


def test_a_cpu_script_of_a_project_that_uses_a_gpu_elsewhere_stays_on_the_cpu(tmp_path):
    # pytorch/examples: reinforcement_learning/reinforce.py never names a device, imagenet/main.py does
    write(tmp_path, {
        "gpu/train.py": """
            import torch


            def train(model, loader, opt):
                model.cuda()
                for x in loader:
                    loss = model(x.cuda()).mean()
                    loss.backward()
                    opt.step()
        """,
        "cpu/reinforce.py": """
            import torch
            import torch.nn as nn


            class Policy(nn.Module):
                def forward(self, x):
                    return x + torch.zeros(x.shape[0], 2)


            def select_action(policy, state):
                return policy(state).argmax().item()


            def main(policy, opt, env):
                for episode in range(100):
                    action = select_action(policy, env.reset())
                    loss = policy(env.step(action)).sum()
                    loss.backward()
                    opt.step()


            if __name__ == "__main__":
                main(Policy(), None, None)
        """,
    })
    assert not any(f[0] == "reinforce.py" for f in check(tmp_path, "--no-cache", "--select", "GPU101,GPU204", "."))
    # the same file as a library module (no entry point): its callers may move its tensors
    lib = (tmp_path / "cpu" / "reinforce.py").read_text().split('if __name__')[0]
    (tmp_path / "cpu" / "reinforce.py").write_text(lib)
    found = check(tmp_path, "--no-cache", "--select", "GPU101,GPU204", ".")
    assert {("reinforce.py", 8, "GPU204"), ("reinforce.py", 12, "GPU101")} <= found


def test_setting_an_attribute_of_an_object_does_not_rebind_its_name(tmp_path):
    # CORL's finetune scripts: `trainer.cql_alpha = ...` in the loop left `trainer`
    # bound "twice", so `trainer.train(batch)` resolved to nothing and its reads were missed
    write(tmp_path, {"train.py": """
        import torch

        class Trainer:
            def __init__(self, actor, optimizer):
                self.actor = actor
                self.optimizer = optimizer
                self.alpha = 1.0

            def train(self, batch):
                loss = self.actor(batch).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                return {"loss": loss.item()}

        def main(actor, optimizer, buffer, steps, switch_at):
            trainer = Trainer(actor.cuda(), optimizer)
            for t in range(steps):
                if t == switch_at:
                    trainer.alpha = 0.5
                batch = buffer.sample(256).cuda()
                log = trainer.train(batch)
    """})
    assert rows_by_path(tmp_path, "GPU101") == [("train.py", 15)]


def test_what_every_branch_of_an_if_else_calls_runs_every_step():
    # guided-diffusion's and consistency_models' MixedPrecisionTrainer.optimize
    graph, summaries = _graph({
        "m": """
            class Trainer:
                def __init__(self, params, use_fp16):
                    self.params = params
                    self.use_fp16 = use_fp16

                def optimize(self, opt):
                    if self.use_fp16:
                        return self._optimize_fp16(opt)
                    else:
                        return self._optimize_normal(opt)

                def _optimize_fp16(self, opt):
                    norms = self._compute_norms(2.0)
                    self._unscale()
                    opt.step()

                def _optimize_normal(self, opt):
                    norms = self._compute_norms()
                    opt.step()

                def _compute_norms(self, scale=1.0):
                    return sum(p.norm().item() for p in self.params) / scale

                def _unscale(self):
                    pass

            def train(model, loader, opt, debug):
                trainer = Trainer(model.parameters(), False)
                for x in loader:
                    loss = model(x)
                    loss.backward()
                    trainer.optimize(opt)
                    if debug:
                        trainer._unscale()
        """,
    })
    fsum = summaries["m.py"][1]["functions"]["m.Trainer.optimize"]
    assert fsum["either"] == [[["m.Trainer._optimize_fp16"], ["m.Trainer._optimize_normal"]]]
    assert graph.every_step.get("m.Trainer.optimize") == "train"
    assert graph.every_step.get("m.Trainer._compute_norms") == "train"  # on both branches
    assert "m.Trainer._optimize_fp16" not in graph.every_step  # only when use_fp16
    assert "m.Trainer._unscale" not in graph.every_step  # on one branch only, and under an option


def test_a_helper_entered_right_after_a_read_starts_synced(tmp_path):
    # MAR's layout: engine.py calls misc.all_reduce_mean(loss_value) right after
    # torch.cuda.synchronize() and loss.item(); the helper's own read waits for
    # nothing the caller has not waited for
    helper = """
        import torch
        import torch.distributed as dist


        def all_reduce_mean(x):
            x_reduce = torch.tensor(x).cuda()
            dist.all_reduce(x_reduce)
            return x_reduce.item()
    """
    engine = """
        import torch
        import misc


        def train(model, loader, opt):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                opt.step()
                loss_value = loss.item()
                misc.all_reduce_mean(loss_value)
    """
    write(tmp_path, {"misc.py": helper, "engine.py": engine})
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("engine.py", 11, "GPU101")}
    from gpulint.model.project.facts import model_with_facts

    text = textwrap.dedent(engine)
    _, summary, _ = model_with_facts(ast.parse(text), text, "engine.py", ["engine"])
    assert summary["functions"]["engine.train"]["synced"] == ["misc.all_reduce_mean"]
    # one caller that reaches it with the backward still queued: its read waits for the step
    write(tmp_path, {"other.py": engine.replace("                loss_value = loss.item()\n", "").replace(
        "misc.all_reduce_mean(loss_value)", "misc.all_reduce_mean(loss.detach())")})
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {
        ("engine.py", 11, "GPU101"), ("misc.py", 9, "GPU101")}
    # the cache follows the caller: once it reads again before the call, the helper is quiet
    write(tmp_path, {"other.py": engine})
    assert check(tmp_path, "--select", "GPU101", ".") == {("engine.py", 11, "GPU101"), ("other.py", 11, "GPU101")}
    write(tmp_path, {"other.py": engine.replace("                loss_value = loss.item()\n", "").replace(
        "misc.all_reduce_mean(loss_value)", "misc.all_reduce_mean(loss.detach())")})
    assert check(tmp_path, "--select", "GPU101", ".") == {("engine.py", 11, "GPU101"), ("misc.py", 9, "GPU101")}


SELF_TEST_MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


if __name__ == "__main__":
    net = Net().cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(10):
        x = torch.randn(4, 8).cuda()
        loss = net(x).sum()
        loss.backward()
        opt.step()
        print(loss.item())
"""


def test_the_main_block_of_a_module_the_project_imports_is_its_self_test(tmp_path):
    """kohya's `sdxl_original_unet.py` ends in a ten-step smoke test under
    `if __name__ == "__main__":`; the trainers import the module for its
    classes. That block, which reads no command line or config, is a test,
    skipped as test files are; the same block in a script nothing imports,
    or one run as the command line says, is the program, and is flagged."""
    write(tmp_path, {
        "models/net.py": SELF_TEST_MODEL,
        "train.py": """\
            import torch
            from models.net import Net

            def main(loader):
                net = Net().cuda()
                opt = torch.optim.SGD(net.parameters(), lr=0.1)
                for x in loader:
                    loss = net(x.cuda()).sum()
                    loss.backward()
                    opt.step()
        """,
        "alone.py": SELF_TEST_MODEL,
        # cleanrl's `dqn.py`: the block trains as the command line says, and
        # an evaluation script imports the script's network class
        "dqn.py": SELF_TEST_MODEL.replace('if __name__ == "__main__":\n',
                                          'if __name__ == "__main__":\n    args = parse_args()\n'),
        "dqn_eval.py": "from dqn import Net\n",
    })
    found = check(tmp_path, "--no-cache", "--select", "GPU101,GPU203", ".")
    assert not any(f[0] == "net.py" for f in found)
    assert ("dqn.py", 19, "GPU203") in found and ("dqn.py", 23, "GPU101") in found
    assert ("alone.py", 18, "GPU203") in found and ("alone.py", 22, "GPU101") in found
    # linted alone, the module knows no importer: its block is flagged as a program's
    assert ("net.py", 18, "GPU203") in check(tmp_path, "--no-cache", "--select", "GPU203", "models/net.py")


def _facts(files):
    return {p: json.dumps(ProjectGraph(files).facts_for(p), sort_keys=True) for p in files}


def test_a_graph_built_from_the_last_rounds_answers_as_a_fresh_one():
    """A join's next round keeps the last graph's resolved references only
    where they can name nothing new; either way it answers as a graph built
    from nothing."""
    texts = {
        "helpers": """
            def log(x):
                print(x.item())

            def other(x):
                return x
        """,
        "train": """
            from helpers import log, other

            def train(model, loader, opt):
                for x in loader:
                    loss = model(x)
                    loss.backward()
                    opt.step()
                    log(loss)
        """,
    }
    texts = {m: textwrap.dedent(t) for m, t in texts.items()}
    files = {f"{m}.py": ([m], _summary(t, m)[1]) for m, t in texts.items()}
    first = ProjectGraph(files)
    assert first.every_step.get("helpers.log") == "train"
    # the same functions, the loop now calls another of them: references stand, edges do not
    moved = dict(files, **{"train.py": (["train"], _summary(texts["train"].replace("log(loss)", "other(loss)"), "train")[1])})
    again = ProjectGraph(moved, first)
    assert again._resolved is first._resolved  # kept: nothing new to name
    assert again.every_step.get("helpers.other") == "train" and "helpers.log" not in again.every_step
    assert {p: json.dumps(again.facts_for(p), sort_keys=True) for p in moved} == _facts(moved)
    # a new function in a file: what references name may change, so nothing is kept
    grown = dict(files, **{"helpers.py": (["helpers"], _summary(texts["helpers"] + "\ndef third(x):\n    return x\n", "helpers")[1])})
    fresh = ProjectGraph(grown, first)
    assert fresh._resolved is not first._resolved
    assert {p: json.dumps(fresh.facts_for(p), sort_keys=True) for p in grown} == _facts(grown)


def test_a_next_rounds_graph_keeps_which_files_import_which_only_where_that_cannot_change():
    """A join's next round keeps, per file whose imports are the same, which
    project files it imports; not for a file that imports a module now
    read in full (before, for its imports only: no file of the graph)."""
    base = {
        "a.py": (["a"], {"functions": {}, "classes": {}, "imports": ["b", "c"]}),
        "b.py": (["b"], {"functions": {}, "imports": ["c"], "imports_only": True}),
        "c.py": (["c"], {"functions": {}, "classes": {}, "imports": []}),
    }
    first = ProjectGraph(base)
    # (a file read for its imports only imports too: `b.py` is among `c.py`'s importers)
    assert sorted(first.importers_of("c.py")) == ["a.py", "b.py"] and first.importers_of("b.py") == []
    grown = dict(base, **{"b.py": (["b"], {"functions": {}, "classes": {}, "imports": ["c"]})})
    again = ProjectGraph(grown, first)
    assert again.importers_of("b.py") == ProjectGraph(grown).importers_of("b.py") == ["a.py"]
    assert sorted(again.importers_of("c.py")) == ["a.py", "b.py"]
    assert again.model_files("a.py", importers=False) == {"a.py", "b.py", "c.py"}


def test_a_files_own_graph_is_not_summarized_again_for_parameter_classes_it_never_asked_about(monkeypatch):
    """A file's own call graph that finds only which classes its functions'
    parameters hold is read again for them only where the summary asked
    about such a parameter (`summary_stands`); either way the summary and
    the table are those of a full fixpoint. (What `log` is handed is of no
    kind the project can tell: a model's tensor would be a parameter kind,
    which a summary reads.)"""
    import gpulint.model.project.facts as facts_module

    asked = """
        class Scaler:
            def __call__(self, loss, opt):
                loss.backward()
                opt.step()

        def helper(s, loss, opt):
            s(loss, opt)

        def train(loader, model, opt):
            s = Scaler()
            for x in loader:
                helper(s, model(x), opt)
    """
    unasked = """
        class Meter:
            def update(self, v):
                self.v = v

        def log(m, v):
            print(v)

        def train(loader, model):
            m = Meter()
            for x in loader:
                model(x)
                log(m, model.stats)
    """
    summarized = []
    real = facts_module.summarize
    monkeypatch.setattr(facts_module, "summarize", lambda fa, refs: summarized.append(1) or real(fa, refs))
    for text, once in ((asked, False), (unasked, True)):
        summarized.clear()
        _, summary, table = _summary(text)
        assert table.get("params"), "the file's own graph finds the parameters' classes"
        assert (len(summarized) == 1) is once
        with monkeypatch.context() as m:
            m.setattr(facts_module, "summary_stands", lambda *a: False)
            _, full_summary, full_table = _summary(text)
        assert (summary, table) == (full_summary, full_table)
    # (read again, the helper's call of its parameter is the project's `Scaler.__call__`)
    assert any(c[0] == "m.Scaler.__call__" for c in _summary(asked)[1]["functions"]["m.helper"].get("calls", []))


def test_what_a_per_step_helper_returns_for_the_environments_step_is_the_action_the_host_needs(tmp_path):
    # the agent's loop hands what `self.explore(state)` returns to `env.step`: its
    # `action.item()` is the action, copied because the host needs it; the value
    # `self.score(state)` returns is only printed, a real sync every step
    write(tmp_path, {
        "agent/sacd.py": """
            import torch


            class SacdAgent:
                def __init__(self, env, policy, optimizer):
                    self.env, self.policy, self.optimizer = env, policy.cuda(), optimizer

                def explore(self, state):
                    state = torch.as_tensor(state).cuda()
                    with torch.no_grad():
                        action = self.policy(state).argmax()
                    return action.item()

                def score(self, state):
                    value = self.policy(torch.as_tensor(state).cuda()).max()
                    return value.item()

                def learn(self, state):
                    loss = self.policy(state).mean()
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
        """,
        "agent/run.py": """
            import torch

            from .sacd import SacdAgent


            def train_episode(env, policy, optimizer, steps):
                agent = SacdAgent(env, policy, optimizer)
                state = env.reset()
                for t in range(steps):
                    action = agent.explore(state)
                    next_state, reward, done, _ = env.step(action)
                    print(agent.score(state))
                    agent.learn(torch.as_tensor(state).cuda())
                    state = next_state
        """,
    })
    assert rows_by_path(tmp_path, "GPU101") == [("agent/sacd.py", 17)]


def test_a_method_called_through_an_alias_runs_every_step(tmp_path):
    # `self.embed = self.positional` in the model: its forward's `self.embed(t)`
    # runs `positional`, whose host read then waits every training step
    write(tmp_path, {
        "net/model.py": """
            import torch
            import torch.nn as nn


            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.embed = self.positional

                def positional(self, t):
                    scale = t.max().item()
                    return t / scale

                def forward(self, x):
                    return self.fc(self.embed(x))
        """,
        "net/train.py": """
            import torch

            from .model import Net


            def train(loader):
                model = Net().cuda()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for x in loader:
                    loss = model(x.cuda()).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        """,
    })
    assert rows_by_path(tmp_path, "GPU101") == [("net/model.py", 13)]


def test_an_action_computed_from_the_read_is_still_the_action(tmp_path):
    # `select_actions` copies the Q-values to the host and returns the argmax of
    # them: the returned action is computed from the read, which the host needs
    # for `env.step`; the copy in `log_values`, whose result is only printed, is a sync
    # (after the next forward: right after `select_actions` it would wait for nothing new)
    write(tmp_path, {
        "dqn/utils.py": """
            import random

            import numpy as np


            def select_actions(action_value, explore_eps):
                action_value = action_value.cpu().numpy().squeeze()
                action = np.argmax(action_value) if random.random() > explore_eps else np.random.randint(4)
                return action


            def log_values(action_value):
                values = action_value.cpu().numpy()
                shown = values.round(2)
                return shown
        """,
        "dqn/agent.py": """
            import numpy as np
            import torch

            from .utils import log_values, select_actions


            class Agent:
                def learn(self, env, net, optimizer, steps):
                    obs = np.array(env.reset())
                    for t in range(steps):
                        with torch.no_grad():
                            action_value = net(torch.tensor(obs).cuda())
                        action = select_actions(action_value, 0.1)
                        obs, reward, done, _ = env.step(action)
                        loss = net(torch.tensor(obs).cuda()).sum()
                        print(log_values(action_value))
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
        """,
    })
    assert rows_by_path(tmp_path, "GPU101") == [("dqn/utils.py", 14)]


def test_a_call_whose_every_return_reads_on_the_host_leaves_nothing_to_wait_for(tmp_path):
    # `score` (another file) returns `out.item()`: right after it the host is in step
    # with the device, so reading the loss there waits for nothing new, and a clock read
    # after `predict` (which returns `.cpu().numpy()`) times the GPU's work; `logits`
    # returns a tensor, so the same read after it is a sync of its own
    write(tmp_path, {
        "helpers.py": """
            def score(model, x):
                out = model(x).sum()
                return out.item()


            def predict(model, x):
                return model(x).argmax(-1).cpu().numpy()


            def logits(model, x):
                return model(x)
        """,
        "train.py": """
            import time

            import torch

            from helpers import logits, predict, score


            def train(model, loader, optimizer):
                model.cuda()
                for x in loader:
                    loss = model(x.cuda()).mean()
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    s = score(model, x.cuda())
                    print(loss.item(), s)


            def train_logits(model, loader, optimizer):
                model.cuda()
                for x in loader:
                    loss = model(x.cuda()).mean()
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    z = logits(model, x.cuda())
                    print(loss.item(), z.shape)


            def timed(model, example, runs=100):
                timings = []
                for _ in range(runs):
                    start = time.monotonic()
                    out = model(example)
                    preds = predict(model, out)
                    timings.append(time.monotonic() - start)
                return timings


            def timed_logits(model, example, runs=100):
                timings = []
                for _ in range(runs):
                    start = time.monotonic()
                    out = model(example)
                    z = logits(model, out)
                    timings.append(time.monotonic() - start)
                return timings
        """,
    })
    assert rows_by_path(tmp_path, "GPU101") == [("helpers.py", 4), ("train.py", 28)]
    assert rows_by_path(tmp_path, "GPU601") == [("train.py", 47)]


def test_a_loop_handed_a_trainer_reads_the_losses_its_step_returns(tmp_path):
    """faster-rcnn-pytorch: `fit_one_epoch(model, train_util, ...)` in a file
    with no word of a step loops over batches, calls
    `train_util.train_step(...)` (a method of the trainer the training script
    builds and hands it: it backpropagates `losses[-1]` and returns `losses`)
    and reads `total.item()` every step. The file is read for the project
    because it is handed an object whose method steps, and what the step
    returns, read with `.item()`, is a tensor unless known otherwise."""
    trainer = """
        import torch


        class Trainer(torch.nn.Module):
            def __init__(self, model, optimizer):
                super().__init__()
                self.model = model
                self.optimizer = optimizer

            def forward(self, x, y):
                out = self.model(x)
                a = (out - y).abs().mean()
                b = (out - y).pow(2).mean()
                return [a, b, a + b]

            def train_step(self, x, y):
                self.optimizer.zero_grad()
                losses = self.forward(x, y)
                losses[-1].backward()
                self.optimizer.step()
                return losses
    """
    fit = """
        import torch


        def fit_one_epoch(model, train_util, gen, cuda):
            total_loss = 0
            for x, y in gen:
                if cuda:
                    x, y = x.cuda(), y.cuda()
                a, b, total = train_util.train_step(x, y)
                total_loss += total.item()
            return total_loss
    """
    script = """
        import torch
        from nets.trainer import Trainer
        from utils.fit import fit_one_epoch

        model = torch.nn.Linear(4, 4).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        train_util = Trainer(model, optimizer)
        gen = [(torch.randn(8, 4), torch.randn(8, 4)) for _ in range(10)]
        for epoch in range(10):
            fit_one_epoch(model, train_util, gen, True)
    """
    files = {"nets/__init__.py": "", "nets/trainer.py": trainer, "utils/__init__.py": "", "utils/fit.py": fit,
             "train.py": script}
    write(tmp_path / "a", files)
    assert check(tmp_path / "a", "--no-cache", "--select", "GPU101", ".") == {("fit.py", 11, "GPU101")}
    # handed no trainer, the file's loop is no training loop the project knows of
    other = dict(files, **{"train.py": script.replace("fit_one_epoch(model, train_util,", "fit_one_epoch(model, None,")})
    assert other["train.py"] != script
    write(tmp_path / "b", other)
    assert check(tmp_path / "b", "--no-cache", "--select", "GPU101", ".") == set()


def test_a_model_a_helper_of_another_file_returns_moved_is_on_the_accelerator(tmp_path):
    # the summary says which positions of the returned tuple were moved
    _, summary, _ = _summary("""
        import torch
        def init_model(cfg, device="cuda"):
            model = torch.nn.Linear(4, 4)
            return model.to(device), "tokenizer"
        def init_moved_in_place(device):
            model = torch.nn.Linear(4, 4)
            model.to(device)
            return model
        def init_on_cpu():
            return torch.nn.Linear(4, 4), "tokenizer"
    """)
    functions = summary["functions"]
    assert functions["m.init_model"]["moves"] == [0]
    assert functions["m.init_moved_in_place"]["moves"] == [-1]
    assert "moves" not in functions["m.init_on_cpu"]
    write(tmp_path, {
        "utils.py": """
            import torch
            def init_model(cfg, device="cuda"):
                model = torch.nn.Linear(4, 4)
                return model.to(device), "tokenizer"
            def init_on_cpu():
                return torch.nn.Linear(4, 4), "tokenizer"
            def make_loader(data):
                return torch.utils.data.DataLoader(data, batch_size=8)
        """,
        "train.py": """
            import torch
            from utils import init_model, init_on_cpu
            def main(loader):
                model, tokenizer = init_model(None, device="cuda:0")
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
                other, _ = init_on_cpu()
                cpu_optimizer = torch.optim.AdamW(other.parameters(), lr=1e-3)
                for x, y in loader:
                    loss = (model(x.cuda()) - y.cuda()).pow(2).mean() + other(x).sum()
                    loss.backward()
                    optimizer.step()
                    cpu_optimizer.step()
        """,
    })
    assert rows_by_path(tmp_path, "GPU405") == [("train.py", 6)]
    # linted alone, the script still reads the summary of the file it imports (summarized
    # on its own: it builds a loader)
    alone = check(tmp_path, "--no-cache", "--select", "GPU405", "train.py")
    assert alone == {("train.py", 6, "GPU405")}


def test_a_loop_over_a_module_list_of_one_class_calls_its_forward_on_every_run():
    _, summary, _ = _summary("""
        import torch.nn as nn
        class Block(nn.Module):
            def forward(self, x):
                return x
        class Other(nn.Module):
            def forward(self, x):
                return x
        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = nn.ModuleList([Block() for _ in range(n)])
                self.mixed = nn.ModuleList([Block(), Other()])
                self.seq = nn.Sequential(*[Block() for _ in range(n)])
            def forward(self, x):
                for block in self.blocks:
                    x = block(x)
                for i, b in enumerate(self.seq):
                    x = b(x)
                for m in self.mixed:
                    x = m(x)
                return x
    """)
    calls = summary["functions"]["m.Net.forward"]["calls"]
    assert any(c[:2] == ["m.Block.__call__", "body"] for c in calls)  # both loops: every run of forward runs them
    assert not any(c[0].startswith("m.Other") for c in calls)  # elements of two classes: not one



def test_a_gans_two_update_sweep_inside_the_loader_loop_makes_it_a_training_loop(tmp_path):
    write(tmp_path, {
        "train.py": """
            import torch
            from helpers import record
            def train(loader, gen, disc, opt_g, opt_d, meter):
                for x in loader:
                    x = x.cuda()
                    for optimizer_idx in [0, 1]:
                        fake = gen(x)
                        record(meter, fake)
                        if optimizer_idx == 0:
                            loss = disc(fake).mean()
                            opt_g.zero_grad()
                            loss.backward()
                            opt_g.step()
                        else:
                            loss = disc(fake.detach()).mean() - disc(x).mean()
                            opt_d.zero_grad()
                            loss.backward()
                            opt_d.step()
        """,
        "helpers.py": """
            def record(meter, fake):
                meter.update(fake.mean().item())
        """,
    })
    # the helper runs on every pass of the training loop: GPU101's, not GPU104's
    assert rows_by_path(tmp_path, "GPU101") == [("helpers.py", 3)]
    assert rows_by_path(tmp_path, "GPU104") == []


PIPELINE = """
    import torch
    from .loaders import StableDiffusionLoraLoaderMixin


    class Pipeline(DiffusionPipeline, StableDiffusionLoraLoaderMixin):
        def __call__(self, latents):
            for t in self.scheduler.timesteps:
                noise = self.unet(latents, t)
                latents = self.scheduler.step(noise, t, latents).prev_sample
            return latents.cpu()
"""


def test_a_file_whose_step_words_start_nothing_is_summarized_on_demand_only():
    # diffusers' pipelines name `.step(` (a scheduler's) and `Loader` (a mixin): nothing in
    # them starts a step, so their summary waits, as a file with no such word does
    from gpulint.engine.lint import ProjectInput

    options = LintOptions(codes=("GPU101",), preview=True)
    text = textwrap.dedent(PIPELINE)
    res = lint_module(text, "pipe.py", options, project=ProjectInput(("pipe",)))
    assert res.deferred and res.summary.get("partial")
    stepping = text.replace("latents.cpu()", "latents.cpu()\n\n    def tune(self, optimizer):\n"
                                             "        optimizer.step()\n")
    res = lint_module(stepping, "pipe.py", options, project=ProjectInput(("pipe",)))
    assert not res.deferred and not res.summary.get("partial")
    for word in ("train_loader = make()", "yield latents", "loss.backward()"):
        other = text.replace("return latents.cpu()", word)
        assert not lint_module(other, "pipe.py", options, project=ProjectInput(("pipe",))).deferred, word


def test_a_model_switched_to_eval_by_the_caller_in_another_file(tmp_path):
    # `evaluate` never switches the model itself: `main.py` does, before each call, so
    # its loop runs the model in eval mode with autograd on (GPU501), through
    # `model.predict` too; a caller that hands a model in training mode keeps it unflagged
    evaluation = """
        import numpy as np


        def evaluate(model, loader):
            hits = 0
            for u in loader:
                scores = model.predict(np.array([u]))
                hits += int(scores.argmax() == 0)
            return hits


        def probe(model, users):
            return [model(u) for u in users]
    """
    main = """
        import torch
        from evaluation import evaluate, probe


        def main(model, loader, users, optimizer):
            model = model.cuda()
            for epoch in range(10):
                model.train()
                for x, y in loader:
                    loss = model(x.cuda(), y.cuda())
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    probe(model, users)
                model.eval()
                print(evaluate(model, users))
    """
    write(tmp_path, {"evaluation.py": evaluation, "main.py": main})
    assert rows_by_path(tmp_path, "GPU501") == [("evaluation.py", 8)]
    # a second caller that does not switch the model: no longer every call
    write(tmp_path, {"other.py": "import torch\nfrom evaluation import evaluate\n\n\n"
                                 "def run(model, loader):\n    return evaluate(model.cuda(), loader)\n"})
    assert rows_by_path(tmp_path, "GPU501") == []


def test_a_function_called_through_a_star_import(tmp_path):
    # `from evaluation import *` binds `evaluate` in `main.py`: its calls are the
    # project's, so `evaluate` is reached with a model in eval mode (GPU501); a name
    # the file binds itself (`probe = print`) is not looked for in the star module
    evaluation = """
        import numpy as np


        def evaluate(model, loader):
            return [model.predict(np.array([u])) for u in loader]


        def probe(model, loader):
            return [model.predict(np.array([u])) for u in loader]
    """
    main = """
        import torch
        from evaluation import *


        def main(model, loader):
            model = model.cuda()
            model.eval()
            print(evaluate(model, loader))
            probe = print
            probe(model, loader)
    """
    write(tmp_path, {"evaluation.py": evaluation, "main.py": main})
    assert rows_by_path(tmp_path, "GPU501") == [("evaluation.py", 6)]


def test_a_per_step_sounding_method_the_project_calls_only_on_a_schedule_is_no_per_step_code(tmp_path):
    # MUNIT's `sample()` and TensoRF's `updateAlphaMask()`: their names sound per step, but
    # the project's only calls of them are under a periodic or scheduled `if`
    model = """
        import torch
        class Trainer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gen = torch.nn.Linear(8, 8)
            def sample(self, x):
                z = torch.randn(x.size(0), 8).cuda()
                return self.gen(z)
            def update_masks(self, x):
                grid = torch.linspace(0, 1, 64).cuda()
                return self.gen(x) * grid[:8]
    """
    write(tmp_path, {
        "trainer.py": model,
        "train.py": """
            import torch
            from trainer import Trainer
            def main(loader, schedule):
                trainer = Trainer().cuda()
                optimizer = torch.optim.Adam(trainer.parameters())
                for it, x in enumerate(loader):
                    loss = trainer.gen(x.cuda()).square().mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    if it % 1000 == 0:
                        trainer.sample(x)
                    if it in schedule:
                        trainer.update_masks(x)
            if __name__ == "__main__":
                main(load_data(), [1000, 2000])
        """,
    })
    assert rows_by_path(tmp_path, "GPU203") == []
    # called every step, the same methods are per-step code
    write(tmp_path, {"train.py": """
        import torch
        from trainer import Trainer
        def main(loader):
            trainer = Trainer().cuda()
            optimizer = torch.optim.Adam(trainer.parameters())
            for x in loader:
                loss = trainer.sample(x).square().mean() + trainer.update_masks(x.cuda()).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        if __name__ == "__main__":
            main(load_data())
    """})
    assert rows_by_path(tmp_path, "GPU203") == [("trainer.py", 8), ("trainer.py", 11)]


def test_a_models_method_that_runs_the_model_is_a_forward_of_it(tmp_path):
    # edge-connect: `process()` runs `self(images)` and its losses; `backward()` steps
    write(tmp_path, {
        "models.py": """
            import torch
            class EdgeModel(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.generator = torch.nn.Conv2d(3, 1, 3, padding=1)
                    self.optimizer = torch.optim.Adam(self.generator.parameters())
                def process(self, images, edges):
                    outputs = self(images)
                    return outputs, torch.nn.functional.l1_loss(outputs, edges)
                def forward(self, images):
                    return self.generator(images)
                def backward(self, loss):
                    loss.backward()
                    self.optimizer.step()
                def train_step(self, images, edges):
                    outputs, loss = self.process(images, edges)
                    self.backward(loss)
                    return outputs
        """,
        "edge_connect.py": """
            import torch
            from models import EdgeModel
            class EdgeConnect:
                def __init__(self, loader):
                    self.edge_model = EdgeModel().cuda()
                    self.loader = loader
                def train(self):
                    self.edge_model.train()
                    for images, edges in self.loader:
                        outputs, loss = self.edge_model.process(images.cuda(), edges.cuda())
                        self.edge_model.backward(loss)
                def eval(self):
                    self.edge_model.eval()
                    for images, edges in self.loader:
                        outputs, loss = self.edge_model.process(images.cuda(), edges.cuda())
                def tune(self):
                    self.edge_model.eval()
                    for images, edges in self.loader:
                        self.edge_model.train_step(images.cuda(), edges.cuda())
        """,
    })
    assert rows_by_path(tmp_path, "GPU501") == [("edge_connect.py", 16)]  # (`eval` only)


def test_names_handed_back_moved_by_a_helper_of_another_file(tmp_path):
    # XLM: `x, lengths = to_cuda(x, lengths)`, with `to_cuda` in utils.py
    write(tmp_path, {
        "utils.py": """
            def to_cuda(*args):
                return [None if x is None else x.cuda() for x in args]
        """,
        "trainer.py": """
            import torch
            from utils import to_cuda
            class Trainer:
                def __init__(self, model, optimizer, iterator):
                    self.model = model.cuda()
                    self.optimizer = optimizer
                    self.iterator = iterator
                    self.words = 0
                def step(self, x, lengths):
                    assert (lengths - 1).sum().item() > 0
                    x, lengths = to_cuda(x, lengths)
                    loss = self.model(x, lengths)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                    self.words += lengths.sum().item()
                def train(self):
                    for x, lengths in self.iterator:
                        self.step(x, lengths)
            def main(net, batches):
                Trainer(net, torch.optim.SGD(net.parameters(), lr=0.1), batches).train()
        """,
    })
    assert rows_by_path(tmp_path, "GPU101") == [("trainer.py", 17)]  # (the read after the move only)


def test_an_attribute_built_by_a_builder_that_chooses_by_a_fixed_string_holds_that_class(tmp_path):
    # motion-diffusion-model: `self.schedule_sampler_type = 'uniform'`, then
    # `create_named_schedule_sampler(self.schedule_sampler_type, diffusion)`: a UniformSampler,
    # so the loss-aware sampler's per-element reads never run
    resample = """
        import torch
        class UniformSampler:
            def sample(self, n, device):
                return torch.randint(0, 1000, (n,), device=device)
        class LossAwareSampler(UniformSampler):
            def update_with_local_losses(self, ts, losses):
                self.history = [x.item() for x in losses]
        def create_named_schedule_sampler(name, diffusion):
            if name == "uniform":
                return UniformSampler()
            elif name == "loss-second-moment":
                return LossAwareSampler()
            raise NotImplementedError(name)
    """
    loop = """
        import torch
        from resample import LossAwareSampler, create_named_schedule_sampler
        class TrainLoop:
            def __init__(self, model, loader):
                self.model = model.cuda()
                self.loader = loader
                self.opt = torch.optim.AdamW(self.model.parameters())
                self.schedule_sampler_type = SAMPLER
                self.schedule_sampler = create_named_schedule_sampler(self.schedule_sampler_type, None)
            def run_loop(self):
                for batch in self.loader:
                    t = self.schedule_sampler.sample(batch.shape[0], "cuda")
                    losses = self.model(batch.cuda(), t)
                    if isinstance(self.schedule_sampler, LossAwareSampler):
                        self.schedule_sampler.update_with_local_losses(t, losses.detach())
                    self.opt.zero_grad()
                    losses.mean().backward()
                    self.opt.step()
        def main(model, loader):
            TrainLoop(model, loader).run_loop()
    """
    write(tmp_path, {"resample.py": resample, "training_loop.py": loop.replace("SAMPLER", "'uniform'")})
    assert rows_by_path(tmp_path, "GPU101") == []
    write(tmp_path, {"training_loop.py": loop.replace("SAMPLER", "'loss-second-moment'")})
    assert rows_by_path(tmp_path, "GPU101") == [("resample.py", 8)]


def test_a_per_step_sounding_helper_of_a_forward_stays_per_step_code(tmp_path):
    # guided-diffusion's `timestep_embedding`, called by `UNetModel.forward`: the project calls
    # it, never from a loop it can see (the loop runs the model through DDP), but a forward is
    # a hook the framework calls, so what it calls keeps its per-step name's reading
    write(tmp_path, {
        "nn.py": """
            import math
            import torch
            def timestep_embedding(timesteps, dim):
                half = dim // 2
                freqs = torch.exp(-math.log(10000) * torch.arange(half) / half).to(device=timesteps.device)
                args = timesteps[:, None].float() * freqs[None]
                return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
            class UNet(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = torch.nn.Linear(64, 64)
                def forward(self, x, t):
                    return self.proj(x + timestep_embedding(t, 64))
        """,
        "train.py": """
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP
            from nn import UNet
            def main(loader):
                model = DDP(UNet().cuda())
                opt = torch.optim.Adam(model.parameters())
                for x, t in loader:
                    loss = model(x.cuda(), t.cuda()).square().mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            if __name__ == "__main__":
                main(load_data())
        """,
    })
    assert rows_by_path(tmp_path, "GPU203") == [("nn.py", 6)]


def test_a_builder_method_that_chooses_by_a_string_counts_its_arguments_without_self():
    # the string is the first argument a call of the method passes: its second parameter
    _, summary, _ = _summary("""
        class UniformSampler:
            pass
        class LossAwareSampler(UniformSampler):
            pass
        class Factory:
            def create(self, name, diffusion):
                if name == "uniform":
                    return UniformSampler()
                elif name == "loss-second-moment":
                    return LossAwareSampler()
                raise NotImplementedError(name)
        def create(name, diffusion):
            if name == "uniform":
                return UniformSampler()
            elif name == "loss-second-moment":
                return LossAwareSampler()
            raise NotImplementedError(name)
    """)
    functions = summary["functions"]
    assert functions["m.Factory.create"]["builds_by"] == [0, "name", {"uniform": "m.UniformSampler",
                                                                     "loss-second-moment": "m.LossAwareSampler"}]
    assert functions["m.create"]["builds_by"][:2] == [0, "name"]


_POLICIES = {
    "pkg/__init__.py": "",
    "pkg/policy/__init__.py": """
        from pkg.policy.base import BasePolicy
        from pkg.policy.td3 import TD3Policy
        from pkg.policy.td3bc import TD3BCPolicy
        from pkg.policy.sac import SACPolicy
    """,
    "pkg/policy/base.py": """
        import torch.nn as nn
        class BasePolicy(nn.Module):
            def learn(self, batch):
                raise NotImplementedError
    """,
    "pkg/policy/td3.py": """
        from pkg.policy.base import BasePolicy
        class TD3Policy(BasePolicy):
            def __init__(self, actor, optim):
                super().__init__()
                self.actor, self.optim = actor, optim
            def learn(self, batch):
                loss = self.actor(batch).pow(2).mean()
                self.optim.zero_grad()
                loss.backward()
                self.optim.step()
                return {"loss": loss.item()}
    """,
    "pkg/policy/td3bc.py": """
        from pkg.policy.td3 import TD3Policy
        class TD3BCPolicy(TD3Policy):
            def learn(self, batch):
                loss = self.actor(batch).abs().mean()
                self.optim.zero_grad()
                loss.backward()
                self.optim.step()
                return {"loss": loss.item()}
    """,
    "pkg/policy/sac.py": """
        from pkg.policy.base import BasePolicy
        class SACPolicy(BasePolicy):
            def __init__(self, actor, optim):
                super().__init__()
                self.actor, self.optim = actor, optim
            def learn(self, batch):
                loss = self.actor(batch).mean()
                self.optim.zero_grad()
                loss.backward()
                self.optim.step()
                return {"loss": loss.item()}
    """,
    "pkg/trainer.py": """
        from pkg.policy import BasePolicy
        class Trainer:
            def __init__(self, policy: BasePolicy, buffer, steps=1000):
                self.policy = policy
                self.buffer = buffer
                self.steps = steps
            def train(self):
                for it in range(self.steps):
                    batch = self.buffer.sample(256)
                    result = self.policy.learn(batch)
                    self.buffer.log(result)
    """,
}


def _run_script(policy: str) -> str:
    return f"""
        import argparse
        import torch
        from pkg.policy import {policy}
        from pkg.trainer import Trainer
        def main():
            args = argparse.ArgumentParser().parse_args()
            actor = torch.nn.Linear(8, 2).cuda()
            policy = {policy}(actor, torch.optim.Adam(actor.parameters()))
            Trainer(policy=policy, buffer=None).train()
        if __name__ == "__main__":
            main()
    """


def test_an_attribute_set_from_a_parameter_holds_the_class_its_callers_pass(tmp_path):
    # OfflineRL-Kit: `MFPolicyTrainer(policy=policy)` stores `self.policy = policy`, and its
    # loop's `self.policy.learn(batch)` runs the policy's step: `learn` runs every step
    write(tmp_path, dict(_POLICIES, **{"run_sac.py": _run_script("SACPolicy")}))
    assert rows_by_path(tmp_path, "GPU101") == [("pkg/policy/sac.py", 12)]


def test_a_parameter_handed_objects_of_several_classes_holds_one_of_them(tmp_path):
    # each run script hands the trainer its own policy: the loop runs the `learn` of each
    # (a re-exported subclass's own `learn`, not its base's, which it overrides)
    write(tmp_path, dict(_POLICIES, **{"run_sac.py": _run_script("SACPolicy"),
                                       "run_td3bc.py": _run_script("TD3BCPolicy")}))
    assert rows_by_path(tmp_path, "GPU101") == [("pkg/policy/sac.py", 12), ("pkg/policy/td3bc.py", 9)]


def test_a_subclass_trainer_runs_the_model_its_base_stored_through_super(tmp_path):
    # S3Rec: `FinetuneTrainer(model, ...)` hands the model on with `super().__init__(model, ...)`,
    # the base stores `self.model = model`, and the evaluation loop runs `self.model.finetune(x)`,
    # a method of the model that runs its own sub-modules: a forward, with autograd on
    write(tmp_path, {
        "models.py": """
            import torch.nn as nn
            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layer = nn.Linear(64, 64)
                def forward(self, x):
                    return self.layer(x)
            class RecModel(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.embeddings = nn.Embedding(1000, 64)
                    self.item_encoder = Encoder()
                def finetune(self, ids):
                    return self.item_encoder(self.embeddings(ids))
        """,
        "trainers.py": """
            import torch
            class Trainer:
                def __init__(self, model, loader):
                    self.model = model.cuda()
                    self.loader = loader
            class FinetuneTrainer(Trainer):
                def __init__(self, model, loader):
                    super().__init__(model, loader)
                def valid(self):
                    self.model.eval()
                    outs = []
                    for ids in self.loader:
                        outs.append(self.model.finetune(ids.cuda()))
                    return outs
        """,
        "main.py": """
            from models import RecModel
            from trainers import FinetuneTrainer
            if __name__ == "__main__":
                model = RecModel()
                trainer = FinetuneTrainer(model, [])
                for epoch in range(10):
                    trainer.valid()
        """,
    })
    assert rows_by_path(tmp_path, "GPU501") == [("trainers.py", 14)]


def test_a_base_class_loop_calling_an_abstract_method_runs_its_overrides(tmp_path):
    # tableshift: `DomainGeneralizationModel.train_epoch` loops over batches and calls
    # `self.update(batches)`, an `@abstractmethod` that each subclass implements with a step
    write(tmp_path, {
        "base.py": """
            from abc import ABC, abstractmethod
            class DGModel(ABC):
                @abstractmethod
                def update(self, batch):
                    raise NotImplementedError
                def train_epoch(self, loader, device="cuda"):
                    for x, y in loader:
                        out = self.update((x.to(device), y.to(device)))
        """,
        "irm.py": """
            import torch
            from base import DGModel
            class IRM(DGModel):
                def __init__(self):
                    self.net = torch.nn.Linear(8, 1).cuda()
                    self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
                def update(self, batch):
                    x, y = batch
                    loss = (self.net(x) - y).pow(2).mean()
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
                    return {"loss": loss.item()}
        """,
        "plain.py": """
            class Plain:
                def update(self, batch):
                    return batch.item()
        """,
        "main.py": """
            from irm import IRM
            from plain import Plain
            if __name__ == "__main__":
                IRM().train_epoch([])
                print(Plain().update(None))
        """,
    })
    assert rows_by_path(tmp_path, "GPU101") == [("irm.py", 14)]


def test_an_object_built_where_it_is_passed_is_of_its_class(tmp_path):
    # `train(net, loader, opt, DiceLoss())`: the criterion parameter holds a DiceLoss, whose
    # forward runs every step (DBNet's `assert loss <= 1` in its Dice loss)
    write(tmp_path, {
        "losses.py": """
            import torch.nn as nn
            class DiceLoss(nn.Module):
                def forward(self, pred, gt):
                    loss = 1 - 2 * (pred * gt).sum() / (pred.sum() + gt.sum() + 1e-6)
                    assert loss <= 1
                    return loss
        """,
        "train.py": """
            import torch
            from losses import DiceLoss
            def train(model, loader, opt, criterion):
                model.cuda()
                for x, y in loader:
                    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
                    loss = criterion(model(x), y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            if __name__ == "__main__":
                net = torch.nn.Linear(4, 4)
                train(net, [], torch.optim.SGD(net.parameters(), lr=0.1), DiceLoss())
        """,
    })
    assert rows_by_path(tmp_path, "GPU101") == [("losses.py", 6)]


def test_a_default_device_set_by_the_entry_script_holds_in_the_files_it_imports(tmp_path):
    # NeuS: `exp_runner.py` calls `torch.set_default_tensor_type("torch.cuda.FloatTensor")`, so
    # the factories without `device=` of the renderer it imports build on the GPU: no CPU
    # tensor to move (GPU203) and none to build in a forward (GPU204). A script that sets
    # nothing leaves the same module's factories on the CPU.
    files = {
        "models/renderer.py": """
            import torch
            import torch.nn as nn
            class Renderer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(3, 1)
                def forward(self, rays):
                    ones = torch.ones([len(rays), 1])
                    idx = torch.arange(rays.shape[0])
                    return self.fc(rays)[idx] * ones
        """,
        "models/__init__.py": "",
        "runner.py": """
            import torch
            from models.renderer import Renderer
            def train(loader):
                net = Renderer().cuda()
                opt = torch.optim.Adam(net.parameters())
                for rays in loader:
                    loss = net(rays.cuda()).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            if __name__ == "__main__":
                torch.set_default_tensor_type("torch.cuda.FloatTensor")
                train([])
        """,
    }
    write(tmp_path, files)
    assert rows_by_path(tmp_path, "GPU203,GPU204") == []
    (tmp_path / "runner.py").write_text(textwrap.dedent(files["runner.py"]).replace(
        '    torch.set_default_tensor_type("torch.cuda.FloatTensor")\n', ""))
    assert rows_by_path(tmp_path, "GPU204") == [("models/renderer.py", 9), ("models/renderer.py", 10)]


def test_a_name_bound_to_one_of_several_classes_builds_one_of_them(tmp_path):
    """iTransformer's `run.py` binds `Exp` to one of two experiment classes in
    the branches of an `if`, then builds `exp = Exp(args)` and calls
    `exp.train(setting)` once per repetition: each class's `train` runs a
    whole training, so the loop around it is one of experiments, and the
    `empty_cache()` after each is not per step (GPU103)."""
    exp = """
        import torch


        class {name}:
            def __init__(self, args):
                self.model = torch.nn.Linear(4, 4).cuda()
                self.opt = torch.optim.Adam(self.model.parameters())

            def train(self, loader):
                for x in loader:
                    loss = self.model(x.cuda()).sum()
                    loss.backward()
                    self.opt.step()
    """
    write(tmp_path, {
        "exps/__init__.py": "",
        "exps/a.py": exp.format(name="ExpA"),
        "exps/b.py": exp.format(name="ExpB"),
        "run.py": """
            import argparse
            import torch
            from exps.a import ExpA
            from exps.b import ExpB

            if __name__ == "__main__":
                parser = argparse.ArgumentParser()
                parser.add_argument("--name", default="a")
                args = parser.parse_args()
                if args.name == "b":
                    Exp = ExpB
                else:
                    Exp = ExpA
                for ii in range(3):
                    exp = Exp(args)
                    exp.train([])
                    torch.cuda.empty_cache()
        """,
    })
    assert rows_by_path(tmp_path, "GPU103") == []
    # an `Exp` bound to a class and, in another branch, to something else builds nothing known
    (tmp_path / "run.py").write_text((tmp_path / "run.py").read_text().replace("Exp = ExpB", "Exp = make_exp"))
    assert rows_by_path(tmp_path, "GPU103") == [("run.py", 18)]


def test_a_class_a_layer_builds_every_call_runs_its_init_every_forward(tmp_path):
    """The Informer family's attention layers build `TriangularCausalMask(B, L,
    device=...)` in every `forward`; the mask class (another file, which no
    step word reaches) builds its mask on the CPU in `__init__` and copies it
    to the GPU. Built so, its `__init__` runs every forward (GPU203); a class
    only `__init__` builds stays set-up."""
    write(tmp_path, {
        "utils/__init__.py": "",
        "utils/masking.py": """
            import torch


            class TriangularCausalMask():
                def __init__(self, B, L, device="cpu"):
                    mask_shape = [B, 1, L, L]
                    with torch.no_grad():
                        self._mask = torch.triu(torch.ones(mask_shape, dtype=torch.bool), diagonal=1).to(device)

                @property
                def mask(self):
                    return self._mask


            class Table():
                def __init__(self, n, device="cpu"):
                    self.table = torch.arange(n).float().to(device)
        """,
        "layers.py": """
            import torch
            import torch.nn as nn
            from utils.masking import TriangularCausalMask, Table


            class FullAttention(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.table = Table(n)

                def forward(self, queries, keys):
                    B, L = queries.shape[:2]
                    scores = torch.einsum("ble,bse->bls", queries, keys)
                    mask = TriangularCausalMask(B, L, device=queries.device)
                    return scores.masked_fill(mask.mask[:, 0], -1e9)
        """,
    })
    assert rows_by_path(tmp_path, "GPU203") == [("utils/masking.py", 9)]


def test_the_cache_reads_again_a_mask_file_when_a_layer_stops_building_its_class(tmp_path):
    """`per_call` is what the project tells the file defining the class:
    a cached result must not outlive it (the layer's file changes, the mask
    file does not)."""
    write(tmp_path, {
        "masking.py": """
            import torch


            class Mask():
                def __init__(self, n, device="cpu"):
                    self.m = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1).to(device)
        """,
        "layer.py": """
            import torch
            import torch.nn as nn
            from masking import Mask


            class Attention(nn.Module):
                def forward(self, q, k):
                    mask = Mask(q.shape[1], device=q.device)
                    return torch.matmul(q, k.transpose(1, 2)).masked_fill(mask.m, -1e9)
        """,
    })
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        def rows():
            res = CliRunner().invoke(cli, ["check", "--output-format", "json", "--select", "GPU203", "."])
            return sorted((f["filename"].replace(os.sep, "/").split("/")[-1], f["location"]["row"])
                          for f in json.loads(res.stdout))
        assert rows() == [("masking.py", 7)]
        (tmp_path / "layer.py").write_text((tmp_path / "layer.py").read_text().replace(
            "mask = Mask(q.shape[1], device=q.device)", "mask = self.mask"))
        assert rows() == []
    finally:
        os.chdir(cwd)


TENSOR_CALLERS = {
    "utils.py": """
        import torch


        def take_per_row(A, indx, num_elem):
            all_indx = indx[:, None] + torch.arange(num_elem, device=A.device)
            return A[torch.arange(all_indx.shape[0])[:, None], all_indx]
    """,
    "train.py": """
        import torch
        from utils import take_per_row


        def train(model, loader, optimizer):
            for x, idx in loader:
                x = x.cuda(non_blocking=True)
                out = model(x)
                loss = take_per_row(out, idx.cuda(non_blocking=True), 3).mean()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
    """,
}


def test_a_parameter_every_per_step_caller_hands_a_device_tensor_holds_one(tmp_path):
    """`take_per_row(out, ...)` is handed the model's output on every per-step
    path: its `A` is a tensor not in host memory, so a CPU `arange` indexing
    it is copied there every step."""
    write(tmp_path, TENSOR_CALLERS)
    found = check(tmp_path, "--no-cache", "--select", "GPU203", ".")
    assert ("utils.py", 7, "GPU203") in found
    graph, _ = _graph({"utils": TENSOR_CALLERS["utils.py"], "train": TENSOR_CALLERS["train.py"]})
    assert graph.param_kinds["utils.take_per_row"]["A"] == "tensor"
    # a caller handing a host tensor (a batch never moved) leaves the parameter unknown
    files = dict(TENSOR_CALLERS)
    files["train.py"] = files["train.py"].rstrip() + "\n" + " " * 16 + "take_per_row(idx, idx, 3)\n"
    write(tmp_path, files)
    assert ("utils.py", 7, "GPU203") not in check(tmp_path, "--no-cache", "--select", "GPU203", ".")



def test_a_base_class_calls_a_method_of_the_object_its_subclasses_hold(tmp_path):
    # pytorch_GAN_zoo: the base trainer's loop calls `self.model.optimizeParameters(x)`, and each
    # trainer subclass, in a file of its own, sets `self.model = ProgressiveGAN(...)`; the method,
    # inherited from the GAN base class, steps: its reads run every training step
    write(tmp_path, {
        "base_gan.py": """
            import torch


            class BaseGAN:
                def __init__(self, net):
                    self.net = net.cuda()
                    self.opt = torch.optim.Adam(self.net.parameters())

                def optimize(self, x):
                    self.opt.zero_grad()
                    loss = self.net(x.cuda()).mean()
                    loss.backward()
                    self.opt.step()
                    return {"loss": loss.item()}
        """,
        "pgan.py": """
            import torch
            from base_gan import BaseGAN


            class ProgressiveGAN(BaseGAN):
                def grow(self):
                    self.net.add_module("extra", torch.nn.Linear(4, 4))
        """,
        "trainer.py": """
            class GANTrainer:
                def train_on_epoch(self, loader):
                    for x in loader:
                        losses = self.model.optimize(x)
        """,
        "pgan_trainer.py": """
            from trainer import GANTrainer
            from pgan import ProgressiveGAN


            class ProgressiveGANTrainer(GANTrainer):
                def __init__(self, net):
                    self.model = ProgressiveGAN(net)
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("base_gan.py", 15, "GPU101")}


def test_a_held_method_the_subclasses_disagree_on_resolves_to_none(tmp_path):
    # two subclasses hold objects of classes with different methods: which runs is not known
    write(tmp_path, {
        "models.py": """
            import torch


            class A:
                def optimize(self, x, opt):
                    loss = x.cuda().mean()
                    loss.backward()
                    opt.step()
                    return loss.item()


            class B:
                def optimize(self, x, opt):
                    return x.cuda().mean().item()
        """,
        "trainer.py": """
            class Trainer:
                def fit(self, loader):
                    for x in loader:
                        self.model.optimize(x, None)
        """,
        "runs.py": """
            from trainer import Trainer
            from models import A, B


            class TrainA(Trainer):
                def __init__(self):
                    self.model = A()


            class TrainB(Trainer):
                def __init__(self):
                    self.model = B()
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == set()


def test_a_method_a_base_class_calls_on_self_runs_its_subclasses_overrides(tmp_path):
    # mdistiller: BaseTrainer.train_epoch calls self.train_iter(...) every step, and CRDTrainer,
    # in the same file or another, overrides train_iter: its reads run every step of its training
    write(tmp_path, {
        "trainer.py": """
            import torch


            class BaseTrainer(object):
                def train_epoch(self, loader):
                    for data in loader:
                        self.train_iter(data)

                def train_iter(self, data):
                    loss = self.model(data.cuda()).mean()
                    loss.backward()
                    self.opt.step()


            class CRDTrainer(BaseTrainer):
                def train_iter(self, data):
                    loss = self.model(data.cuda()).mean()
                    loss.backward()
                    self.opt.step()
                    return loss.cpu()
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("trainer.py", 21, "GPU101")}


def test_a_base_class_placeholder_leaves_the_held_object_to_its_subclasses(tmp_path):
    """PyCIL: `BaseLearner.__init__` sets `self._network = None` and each
    learner (another file) builds the network; the base's
    `self._network.extract_vector(x)` after `self._network.eval()` is a
    forward of that network (its method runs a sub-module), with autograd
    on (GPU501). A placeholder is no binding of the base's own."""
    # (before, `self._network = None` counted as the base's binding, and the call resolved to
    # nothing; nets.py, where nothing can start a step, is read because the call asks for it)
    write(tmp_path, {
        "nets.py": """
            import torch
            from torch import nn


            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.convnet = nn.Conv2d(3, 8, 3)

                def forward(self, x):
                    return self.convnet(x).flatten(1)

                def extract_vector(self, x):
                    return self.convnet(x)
        """,
        "base.py": """
            import torch


            class BaseLearner:
                def __init__(self):
                    self._network = None
                    self._device = torch.device("cuda")

                def extract_vectors(self, loader):
                    self._network.eval()
                    out = []
                    for x, _ in loader:
                        out.append(self._network.extract_vector(x.to(self._device)).cpu().numpy())
                    return out
        """,
        "icarl.py": """
            from base import BaseLearner
            from nets import Net


            class ICaRL(BaseLearner):
                def __init__(self):
                    super().__init__()
                    self._network = Net().to(self._device)
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU501", ".") == {("base.py", 14, "GPU501")}


def test_an_abstract_step_of_a_base_without_bases_runs_its_overrides(tmp_path):
    """pixel-nerf: `trainlib.Trainer` (a class with no bases, re-exported by
    its package, imported by the training script from its own folder) loops
    over the data calling `self.train_step(data)`, which raises
    `NotImplementedError`; the script's subclass implements it and reads a
    loss on the host every step (GPU101 there)."""
    write(tmp_path, {
        "train/trainlib/__init__.py": "from .trainer import Trainer\n",
        "train/trainlib/trainer.py": """
            import torch


            class Trainer:
                def __init__(self, net, loader):
                    self.net = net
                    self.loader = loader
                    self.optim = torch.optim.Adam(net.parameters())

                def train_step(self, data):
                    raise NotImplementedError()

                def start(self):
                    for data in self.loader:
                        losses = self.train_step(data)
                        self.optim.step()
                        self.optim.zero_grad()
                        print(losses)
        """,
        "train/train.py": """
            import torch
            import trainlib


            class PixelNeRFTrainer(trainlib.Trainer):
                def calc_losses(self, data):
                    loss = self.net(data.cuda()).mean()
                    loss.backward()
                    return {"t": loss.item()}

                def train_step(self, data):
                    return self.calc_losses(data)


            PixelNeRFTrainer(torch.nn.Linear(2, 2).cuda(), []).start()
        """,
    })
    assert check(tmp_path, "--no-cache", "--select", "GPU101", ".") == {("train.py", 10, "GPU101")}


def test_a_method_of_a_parameter_of_no_known_class_runs_the_project_methods_of_that_name(tmp_path):
    """continual-learning: `train_cl(model, ...)` loops over batches and calls
    `model.train_a_batch(x, y)`, with `model` one of several classifiers
    handed through a training function chosen at run time. Each project
    class's `train_a_batch` then runs every step, and its `.item()` reads
    are per-step syncs (GPU101). A plain verb (`model.update(x)`) names
    too many things to say which class it is."""
    write(tmp_path, {
        "models.py": """
            import torch
            from torch import nn


            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.optimizer = torch.optim.Adam(self.parameters(), fused=True)

                def train_a_batch(self, x, y):
                    loss = nn.functional.cross_entropy(self.fc(x), y)
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                    return {"loss": loss.item()}

                def update(self, x):
                    return self.fc(x).sum().item()


            class AutoEncoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.enc = nn.Linear(4, 4)
                    self.optimizer = torch.optim.Adam(self.parameters(), fused=True)

                def train_a_batch(self, x, y):
                    loss = (self.enc(x) - x).pow(2).mean()
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
                    return {"loss": loss.item()}
        """,
        "train.py": """
            def train_cl(model, loader, device, history):
                for x, y in loader:
                    history.append(model.train_a_batch(x.to(device), y.to(device)))
                    model.update(x.to(device))
        """,
    })
    # (`Classifier.update`'s read is not per-step: `model.update` resolves to nothing)
    assert rows_by_path(tmp_path, "GPU101") == [("models.py", 17), ("models.py", 34)]


def test_a_parameter_method_defined_in_a_file_read_only_when_asked_is_summarized(tmp_path):
    """EfficientZero: `update_weights(model, batch, optimizer, config)` calls
    `config.scalar_transform(target)` every step; the config class lives in
    a file where nothing starts a step, read only when per-step code needs
    it. Its compound method names are in its partial summary, so the
    project asks for it, and the CPU factory there is per-step (GPU203)."""
    write(tmp_path, {
        "config.py": """
            import torch


            class BaseConfig:
                def __init__(self, eps=0.001):
                    self.eps = eps

                def scalar_transform(self, x):
                    sign = torch.ones(x.shape).to(x.device)
                    return sign * (torch.sqrt(torch.abs(x) + 1) - 1) + self.eps * x
        """,
        "train.py": """
            import torch


            def update_weights(model, loader, optimizer, config):
                for obs, target in loader:
                    target = config.scalar_transform(target.cuda())
                    loss = (model(obs.cuda()) - target).pow(2).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    })
    assert rows_by_path(tmp_path, "GPU203") == [("config.py", 10)]


def test_a_subclass_of_data_parallel_another_file_defines_is_data_parallel(tmp_path):
    # first-order-model's vendored `sync_batchnorm`, re-exported by its package: a file that only
    # defines the class (no step, no layer) is still read for its bases
    write(tmp_path, {
        "sync_batchnorm/__init__.py": "from .replicate import DataParallelWithCallback\n",
        "sync_batchnorm/replicate.py": """
            from torch.nn.parallel.data_parallel import DataParallel


            class DataParallelWithCallback(DataParallel):
                def replicate(self, module, device_ids):
                    return super().replicate(module, device_ids)
        """,
        "train.py": """
            import torch
            from sync_batchnorm import DataParallelWithCallback


            class Wrapper(torch.nn.Module):
                pass


            def train(model, loader, optimizer):
                full = DataParallelWithCallback(model, device_ids=[0, 1])
                other = Wrapper()
                for x, y in loader:
                    loss = full(x.cuda(), y.cuda()).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    })
    found = check(tmp_path, "--no-cache", "--preview", "--select", "GPU001", ".")
    assert found == {("train.py", 11, "GPU001")}


def test_a_subclass_of_data_loader_another_file_defines_is_a_data_loader(tmp_path):
    # meshed-memory-transformer's `data.DataLoader`, which sets the dataset's own `collate_fn`
    write(tmp_path, {
        "data/__init__.py": """
            from torch.utils.data import DataLoader as TorchDataLoader


            class DataLoader(TorchDataLoader):
                def __init__(self, dataset, *args, **kwargs):
                    super().__init__(dataset, *args, collate_fn=dataset.collate_fn(), **kwargs)
        """,
        "train.py": """
            import torch
            from data import DataLoader


            def train(model, dataset, optimizer):
                loader = DataLoader(dataset, batch_size=32)
                for x, y in loader:
                    loss = model(x.cuda(), y.cuda()).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    })
    found = check(tmp_path, "--no-cache", "--preview", "--select", "GPU202", ".")
    assert found == {("train.py", 7, "GPU202")}


def test_a_module_name_two_files_share_resolves_the_same_from_a_relative_path(tmp_path):
    """StyleSpeech: `utils.py` at the top and `preprocessors/utils.py` both
    answer to `utils`; the script's own folder decides (`graph.module_file`).
    Linted as `gpulint check .`, the paths are relative (`train.py`,
    `utils.py`), and the folder test must hold for them as for absolute
    ones: the helper's per-step read is found either way."""
    files = {
        "utils.py": """
            import torch


            def mask_from_lengths(lengths, max_len=None):
                if max_len is None:
                    max_len = torch.max(lengths).item()
                ids = torch.arange(max_len, device=lengths.device)
                return ids.unsqueeze(0) < lengths.unsqueeze(1)
        """,
        "preprocessors/utils.py": """
            import numpy as np


            def average(x):
                return np.mean(x)
        """,
        "train.py": """
            import torch
            from utils import mask_from_lengths


            def main(model, loader, optimizer):
                for x, lengths in loader:
                    x, lengths = x.cuda(), lengths.cuda()
                    loss = (model(x) * mask_from_lengths(lengths)).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    }
    write(tmp_path, files)
    assert rows_by_path(tmp_path, "GPU101") == [("utils.py", 7)]
    assert check(tmp_path, "--no-cache", "--select", "GPU101", str(tmp_path)) == {("utils.py", 7, "GPU101")}
