"""GPU301 loss-accumulated-with-graph: which values carry a graph, which
accumulators outlive an iteration, and when the graph is wanted."""

from __future__ import annotations

import textwrap

import pytest

from helpers import fix, lint

CODE = "GPU301"


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


def rows(code: str):
    return [f.row for f in lint(src(code), codes=[CODE])]


def marked(code: str):
    return [i for i, line in enumerate(src(code).splitlines(), 1) if "# leak" in line]


def check(code: str):
    assert rows(code) == marked(code)


def test_loss_from_a_helper_counts_because_it_is_backwarded():
    check(
        """
        def train(model, loader, opt):
            total = 0
            for batch in loader:
                loss = compute_loss(model, batch)
                loss.backward()
                opt.step()
                total += loss  # leak
            return total
        """
    )


def test_unknown_values_without_backward_are_not_flagged():
    check(
        """
        def train(model, loader, opt, other):
            total = 0
            for batch in loader:
                out = compute(batch)
                other.backward()
                total += out
        """
    )


def test_reaching_definition_is_followed_in_source_order():
    check(
        """
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            losses.append(loss)  # leak
            loss = loss.item()
            later.append(loss)
        """
    )


def test_periodic_reset_still_accumulates_between_resets():
    check(
        """
        tr_loss = 0
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            tr_loss += loss  # leak
            if step % 100 == 0:
                print(tr_loss / 100)
                tr_loss = 0
        """
    )


def test_unconditional_reset_each_iteration_is_not_accumulation():
    check(
        """
        for x, y in loader:
            step_losses = []
            total = 0
            for head in heads:
                step_losses.append(criterion(head(x), y))
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            total += loss
            step_losses.append(loss)
        """
    )


def test_cleared_list_is_not_accumulation():
    check(
        """
        for x, y in loader:
            window.clear()
            loss = criterion(model(x), y)
            loss.backward()
            window.append(loss)
        """
    )


def test_gradient_accumulation_is_not_flagged():
    check(
        """
        import torch
        def train(model, loader, opt, accum):
            total = 0
            chunks = []
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y) / accum
                total = total + loss
                chunks.append(loss)
                if (i + 1) % accum == 0:
                    total.backward()
                    opt.step()
                    total = 0
                    objective = torch.stack(chunks).sum()
                    torch.autograd.backward(objective)
                    chunks = []
        """
    )


def test_values_computed_under_no_grad_do_not_carry_a_graph():
    check(
        """
        import torch
        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            with torch.no_grad():
                acc = (out.softmax(-1) * y).sum()
                ema = 0.9 * loss
            accs.append(acc)
            emas.append(ema)
            with torch.no_grad():
                hist.append(loss)
        """
    )


def test_detaching_conversions():
    check(
        """
        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            a.append(loss.detach())
            b.append(loss.item())
            c.append(float(loss))
            d.append(loss.data)
            e.append(out.argmax(-1))
            f.append(loss.detach().cpu())
            g.append(out.shape)
            h.append(loss.cpu())  # leak
            i.append(out.mean())  # leak
        """
    )


def test_model_outputs_attributes_and_tuple_unpacking():
    check(
        """
        for it in range(max_iters):
            X, Y = get_batch("train")
            logits, loss = model(X, Y)
            loss.backward()
            all_logits.append(logits)  # leak
            outputs = model(X)
            outputs.loss.backward()
            self.history["logits"].append(outputs.logits)  # leak
        """
    )


def test_validation_loop_without_backward_is_not_a_training_loop():
    check(
        """
        val_losses = []
        for x, y in val_loader:
            val_losses.append(criterion(model(x), y))
        """
    )


def test_accumulation_outside_the_training_loop():
    check(
        """
        for epoch in range(10):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
            epoch_losses.append(loss)
        """
    )


@pytest.mark.parametrize(
    "line,fixed_line",
    [
        ("total += loss", "total += loss.detach()"),
        ("total = total + loss", "total = total + loss.detach()"),
        ("total = loss + total", "total = loss.detach() + total"),
        ("total += loss * x.size(0)", "total += (loss * x.size(0)).detach()"),
        ("total += -loss", "total += (-loss).detach()"),
        ("self.total += outputs.loss", "self.total += outputs.loss.detach()"),
        ("hist['loss'].append(loss)", "hist['loss'].append(loss.detach())"),
        ("hist.append(criterion(out, y))", "hist.append(criterion(out, y).detach())"),
    ],
)
def test_fix(line, fixed_line):
    template = """
        for x, y in loader:
            out = model(x)
            outputs = out
            loss = criterion(out, y)
            loss.backward()
            {}
        """
    bad = src(template.format(line))
    good = src(template.format(fixed_line))
    assert [f.row for f in lint(bad, codes=[CODE])] == [6]
    out = fix(bad, codes=[CODE])
    assert out == good
    assert lint(out, codes=[CODE]) == []


def test_backward_through_a_redefinition_and_combined_losses():
    check(
        """
        for idx, batch in enumerate(loader):
            current_num_tokens = (batch["labels"] != -100).sum()
            bs = batch_size_of(batch)
            current_loss = self._loss_fn(self._model(**batch), batch["labels"])
            running_loss += current_loss  # leak
            if self._optimizer_in_bwd:
                current_loss = current_loss * world_size
            current_loss.backward()
            class_loss, kd_loss = self._loss_step(batch)
            running_class_loss += class_loss * current_num_tokens  # leak
            combined = (1 - ratio) * class_loss + ratio * kd_loss / bs
            combined.backward()
            num_tokens += current_num_tokens
            seen += bs
        """
    )


def test_reset_after_the_accumulation_bounds_it_to_one_iteration():
    check(
        """
        buf = []
        total = 0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            buf.append(loss)
            total = total + loss  # leak
            total = total + 0.1 * loss  # leak
            log(buf)
            buf.clear()
        """
    )


def test_the_fix_is_unsafe_for_a_value_unpacked_from_a_helper():
    """Pyro's Trace_ELBO: `loss_particle` is a float built with `.item()` next
    to the surrogate loss that is backwarded; `.detach()` on it would raise."""
    code = src(
        """
        import torch

        def loss_and_grads(self, traces):
            loss = 0.0
            for trace in traces:
                loss_particle, surrogate = self._particle(trace)
                loss += loss_particle / self.num_particles
                surrogate.backward()
            return loss
        """
    )
    [f] = lint(code, codes=["GPU301"])
    assert f.fix.applicability == "unsafe"
    assert fix(code, codes=["GPU301"]) == code


def test_the_fix_stays_safe_for_a_model_output():
    code = src(
        """
        import torch

        losses = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)
        """
    )
    [f] = lint(code, codes=["GPU301"])
    assert f.fix.applicability == "safe"
