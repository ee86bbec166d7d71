"""Best-checkpoint selection on a dev split, for every trainer with ``--dev``: :class:`BestOnDev` is the loop's
``on_eval`` (:func:`.loop.train_loop`): it scores the weights at each evaluation, keeps a copy of the best so far
(saved in every checkpoint, so a resumed run keeps the same best), and stops after ``patience`` evaluations without
gain when a trainer asks for early stopping. :func:`eval_steps` is when it runs: every ``eval_every`` steps (default
once per epoch) and at the last step. The releases choose their model the same way: AmbigQA's run.py:166-174
@5c8cdb1, REFUEL's run.py:669-686 @159090e and AskCQ's run.py:216-234 @d8be017 keep "best-model.pt", the weights of
the evaluation with the highest dev metric."""
from __future__ import annotations

import logging
from typing import Callable

log = logging.getLogger("cqtools")


def every_of(eval_every: int | None, examples: int, per_batch: int) -> int:
    """Steps between evaluations: ``eval_every``, or (None) one epoch of ``examples`` in ``per_batch`` a step."""
    return eval_every or -(-examples // per_batch)


def eval_steps(every: int, total: int):
    """``evaluate_at(step, state)`` for the loop: every ``every`` steps, when the budget is spent, and at the last
    step (``total``)."""
    return lambda step, state: step % every == 0 or state.budget.spent(step) or step == total


def metric_key(metric: str):
    """Orders dev scores by ``metric`` (a missing score, None, below any)."""
    return lambda scores: (-1.0 if scores.get(metric) is None else scores[metric],)


class BestOnDev:
    """Dev evaluations during training: the history, the best scores and weights so far, patience.
    ``evaluate()`` gives a dict of scores; ``key(scores)`` orders them (higher is better, the first evaluation
    reaching the highest key wins a tie); ``patience`` None never stops early."""

    def __init__(self, model, evaluate: Callable[[], dict], key: Callable[[dict], tuple], loss_window: int,
                 patience: int | None = None, name: str = "train"):
        self.model, self.evaluate, self.key, self.loss_window = model, evaluate, key, loss_window
        self.patience, self.name = patience, name
        self.history: list[dict] = []
        self.best: dict | None = None
        self.best_state = None
        self.bad = 0

    def entry(self, scores: dict) -> dict:
        """What the history keeps of one evaluation's scores (all of them)."""
        return dict(scores)

    def __call__(self, step: int, epoch: int, state) -> bool:
        """Evaluate; keep the weights if best; True (stop) after ``patience`` evaluations without gain."""
        scores = self.evaluate()
        self.history.append({"step": step, "epoch": epoch, "loss": state.mean_loss(self.loss_window),
                             **self.entry(scores)})
        self.log(step, state, scores)
        if self.best is None or self.key(scores) > self.key(self.best):
            self.best = {**self.history[-1]}
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            self.bad = 0
            return False
        self.bad += 1
        if self.patience is not None and self.bad >= self.patience:
            log.info("early stop: no dev improvement in %d evaluations", self.bad)
            return True
        return False

    def log(self, step: int, state, scores: dict) -> None:
        shown = " ".join(f"{k} {v:.4f}" for k, v in scores.items() if isinstance(v, float))
        log.info("%s step %d (%.0f s): loss %.3f dev %s", self.name, step, state.seconds(), self.history[-1]["loss"],
                 shown)

    def best_scores(self) -> dict:
        """The scores of the evaluation whose weights are kept (its step, epoch and loss left out)."""
        return {k: v for k, v in (self.best or {}).items() if k not in ("step", "epoch", "loss")}

    def restore(self) -> bool:
        """Put the best weights back into the model; False when nothing was evaluated (no step taken)."""
        if self.best_state is None:
            return False
        self.model.load_state_dict(self.best_state)
        return True

    def state_dict(self) -> dict:
        """What a checkpoint keeps of the evaluations so far (a resumed run picks the same best weights)."""
        return {"history": self.history, "best": self.best, "best_state": self.best_state, "bad": self.bad}

    def load_state_dict(self, saved: dict) -> None:
        self.history, self.best, self.best_state, self.bad = (saved[k] for k in ("history", "best", "best_state",
                                                                                  "bad"))


def scoring_saved(run, save: Callable[[], None], score: Callable[[], dict]) -> Callable[[], dict]:
    """``evaluate()`` for :class:`BestOnDev` that saves the weights under way as the trainer saves its model and
    scores that directory as its stage reads it (``score()``), torch's RNGs left as they were: evaluating must not
    change the training that follows. The main process saves and scores (the others train into scratch folders,
    cqtools/cli/train.py ``_trained``) and sends them the scores, so every process keeps the same best."""
    import torch

    def evaluate() -> dict:
        scores = None
        if run.is_main:
            save()
            device = run.accelerator.device
            with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                scores = score()
        if run.accelerator.num_processes > 1:
            from accelerate.utils import broadcast_object_list

            scores = broadcast_object_list([scores])[0]
        return scores

    return evaluate


def selection(run, model, examples: int, save: Callable[[], None], score: Callable[[], dict] | None, metric: str,
              name: str, patience: int | None = None) -> tuple[BestOnDev | None, dict, int]:
    """(the keeper of the best dev weights on ``metric``, the loop's evaluation arguments, the run's total steps) of
    a trainer of ``examples`` items: ``score()`` scores the weights ``save()`` wrote (None: no dev, no keeper)."""
    from .loop import total_steps

    cfg = run.cfg
    per_step = cfg.grad_accum * run.accelerator.num_processes
    total = total_steps(examples, cfg.batch_size, cfg.epochs, cfg.max_steps, per_step)
    if score is None:
        return None, {}, total
    every = every_of(cfg.eval_every, examples, cfg.batch_size * per_step)
    keeper = BestOnDev(model, scoring_saved(run, save, score), metric_key(metric), every, patience=patience, name=name)
    return keeper, {"evaluate_at": eval_steps(every, total), "on_eval": keeper, "keep": (keeper,)}, total


def dev_report(keeper: BestOnDev | None, metric: str) -> dict:
    """What cq_train.json says of the selection: the metric, the evaluation whose weights were kept (``best``:
    its step and scores) and every evaluation (``history``); {} without one."""
    if keeper is None or keeper.best is None:
        return {}
    return {"selected_on": metric, "best": keeper.best, "history": keeper.history}
