"""A training run on accelerate: the :class:`accelerate.Accelerator` a trainer's loop steps through (mixed
precision, gradient accumulation, one process per device under ``accelerate launch``), and its checkpoints:
``OUT/checkpoints/step-N`` written by ``Accelerator.save_state`` (weights, optimiser, scheduler, every
process's RNG states, and the objects the loop registers: its step, losses and a trainer's dev history), read
back by ``--resume`` / ``--resume-from``. A checkpoint counts once its ``cq_checkpoint.json`` is written (a
run killed while saving leaves a folder without it, which is ignored)."""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import threading
from dataclasses import dataclass

from ..errors import CQError, InputError
from .settings import CHECKPOINTS, TrainConfig

log = logging.getLogger("cqtools")
MARKER = "cq_checkpoint.json"
KEEP = 2  # checkpoints kept: the newest, and the one before in case the newest is being written
# Settings a resumed run must share with the one that saved the checkpoint (else it is not the same run).
SAME_RUN = ("batch_size", "grad_accum", "epochs", "lr", "warmup_steps", "warmup_ratio", "weight_decay", "no_decay",
            "decay_steps", "shuffle", "accumulate", "max_steps", "seed", "limit", "mixed_precision")
# ... and what decides the dev evaluations a checkpoint carries (its best weights so far: cqtools/train/best.py): the
# records, how often, how they are decoded (beams, tokens) and scored, when to stop; a setting a trainer lacks counts
# as None
SAME_EVALUATION = ("dev", "dev_limit", "holdout", "eval_every", "keep", "select", "patience", "num_beams",
                   "max_answer_tokens", "max_cq_tokens", "eval_passages")


class Interrupted(CQError):
    """SIGTERM (a pre-emption, `scancel`, a requeue) stopped training after a checkpoint was saved."""

    exit_code = 143  # 128 + SIGTERM, as a process the signal killed


class StopSignal:
    """While training saves checkpoints, SIGTERM is recorded instead of killing the process: the loop saves a
    checkpoint after the step under way and stops (SLURM sends SIGTERM before its SIGKILL at a pre-emption or
    at the time limit). Every process must agree: under several, the flag is summed over them each step."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.caught, self.before = False, None

    def __enter__(self):
        if self.enabled:
            self.before = signal.signal(signal.SIGTERM, self._catch)
        return self

    def __exit__(self, *exc):
        if self.enabled:
            signal.signal(signal.SIGTERM, self.before)

    def _catch(self, signum, frame):
        self.caught = True

    def asked(self, accelerator) -> bool:
        if not self.enabled:
            return False
        if accelerator.num_processes == 1:
            return self.caught
        import torch

        flag = torch.tensor(float(self.caught), device=accelerator.device)
        return accelerator.reduce(flag, "sum").item() > 0


def process_rank() -> int:
    """This process's rank under `accelerate launch` / torchrun (0 when launched alone)."""
    from ..config import env

    return int(env("RANK", "0"))


def accelerator_for(cfg: TrainConfig):
    """The Accelerator of ``cfg``'s run: its device (``cfg.device``: auto picks this process's GPU), precision
    and accumulation; fp16 on a CPU is refused (torch has no fp16 autocast there: use bf16)."""
    import torch
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from ..models.load import pick_device

    device = pick_device(cfg.device)
    if cfg.mixed_precision == "fp16" and not device.startswith("cuda"):
        raise InputError(f"--mixed-precision fp16 needs a CUDA GPU (this run is on {device}); pass bf16 or no")
    if cfg.mixed_precision == "bf16" and device.startswith("cuda") and not torch.cuda.is_bf16_supported():
        raise InputError("--mixed-precision bf16: this GPU has no bf16 (before Ampere); pass fp16 or no")
    AcceleratorState._reset_state()  # one process may train twice (tests, notebooks) with other precisions
    # the scheduler is stepped by the loop once per optimiser step, whatever the number of processes
    return Accelerator(cpu=device == "cpu", mixed_precision=cfg.mixed_precision,
                       gradient_accumulation_steps=cfg.grad_accum, step_scheduler_with_optimizer=False)


def step_of(path: str) -> int | None:
    match = re.fullmatch(r"step-(\d+)", os.path.basename(os.path.normpath(path)))
    return int(match.group(1)) if match and os.path.exists(os.path.join(path, MARKER)) else None


@dataclass
class TrainRun:
    """One trainer's run: its settings, Accelerator and checkpoint folder."""

    cfg: TrainConfig
    accelerator: object
    resume_at: str | None = None  # the checkpoint this run continues (:meth:`resume_path`, checked at the start)

    @property
    def device(self) -> str:
        """Where this process's model goes: cpu, or its own GPU (cuda:N under `accelerate launch`)."""
        device = self.accelerator.device
        return "cpu" if device.type == "cpu" else str(device)

    @property
    def is_main(self) -> bool:
        return self.accelerator.is_main_process

    @property
    def folder(self) -> str:
        return self.cfg.checkpoints or os.path.join(self.cfg.out, CHECKPOINTS)

    def saved(self) -> list[str]:
        """The complete checkpoints in the folder, oldest first."""
        if not os.path.isdir(self.folder):
            return []
        found = [(step_of(os.path.join(self.folder, n)), n) for n in os.listdir(self.folder)]
        return [os.path.join(self.folder, n) for step, n in sorted((s, n) for s, n in found if s is not None)]

    def resume_path(self) -> str | None:
        """The checkpoint to continue from (checked against this run's settings), or None."""
        cfg = self.cfg
        if cfg.resume_from:
            if step_of(cfg.resume_from) is None:
                raise InputError(f"--resume-from {cfg.resume_from}: not a complete checkpoint (a step-N folder "
                                 f"with {MARKER}); pass one of {self.folder}/step-N")
            path = cfg.resume_from
        elif cfg.resume:
            path = (self.saved() or [None])[-1]
            if path is None:
                log.info("--resume: no checkpoint in %s yet; training from the start", self.folder)
                return None
        else:
            if cfg.save_every and self.saved():
                raise InputError(f"{self.folder} holds checkpoints of an earlier run; pass --resume to continue it, "
                                 "or remove that folder to start over")
            return None
        with open(os.path.join(path, MARKER)) as fh:
            saved = json.load(fh)
        here = self.identity()
        differ = [k for k in here if saved.get(k) != here[k]]
        if differ:
            were = ", ".join(f"{k}={saved.get(k)!r}" for k in differ)
            raise InputError(f"{path} was saved by a run with other settings ({were}); resume with the same ones, or "
                             "start a new run in another --out")
        return path

    def identity(self) -> dict:
        return {**{k: getattr(self.cfg, k) for k in SAME_RUN},
                **{k: getattr(self.cfg, k, None) for k in SAME_EVALUATION}, "processes": self.accelerator.num_processes}

    def save(self, step: int) -> None:
        """Checkpoint ``step`` (every process takes part; the main one marks it complete, then drops old ones)."""
        path = os.path.join(self.folder, f"step-{step}")
        # tied weights (T5's, BART's embeddings) are saved once, with a warning at each save; loading ties them
        # again (a resumed run's weights equal an uninterrupted run's: tests/test_train_resume.py)
        noisy = logging.getLogger("accelerate.utils.other")
        level = noisy.level
        noisy.setLevel(logging.ERROR)
        try:
            self.accelerator.save_state(path)
        finally:
            noisy.setLevel(level)
        self.accelerator.wait_for_everyone()
        if self.is_main:
            with open(os.path.join(path, MARKER), "w") as fh:
                json.dump({"step": step, **self.identity()}, fh, indent=2, sort_keys=True)
            for old in self.saved()[:-KEEP]:
                shutil.rmtree(old, ignore_errors=True)
        self.accelerator.wait_for_everyone()


def start(cfg: TrainConfig) -> TrainRun:
    """The run of ``cfg``: call before loading the model (it lands on ``run.device``); a checkpoint to resume
    from is found and checked here, before any loading."""
    run = TrainRun(cfg, accelerator_for(cfg))
    run.resume_at = run.resume_path()
    return run
