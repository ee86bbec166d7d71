"""The settings of cq's fine-tuning trainers: :class:`TrainConfig` (data, budget, the accelerate loop's
precision, accumulation and checkpoints, device) and each trainer's own subclass. `cq train NAME`'s flags are
generated from these fields (cli/declared.py), so the command line and Python share one set of defaults."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..config import RunConfig
from ..models.roles import ENCODER, LLM
from ..registry import option
from ..stages import detect as detect_stage
from ..stages.gen_cq import FromDqsOptions
from ..stages.options import CommandSettings

# The loop's settings every trainer shares (`cq train NAME` places these flags first).
LOOP_SETTINGS = ("epochs", "batch_size", "lr", "warmup_steps", "warmup_ratio", "weight_decay", "no_decay",
                 "decay_steps", "shuffle", "max_steps", "max_seconds", "limit", "dev_limit", "mixed_precision", "grad_accum",
                 "accumulate", "save_every", "resume", "resume_from")
COMMON_SETTINGS = (*LOOP_SETTINGS, "passages")  # flags every `cq train` subcommand places first
BATCH_HELP = "Examples per batch on each process (the effective batch: this x --grad-accum x processes)."
CHECKPOINTS = "checkpoints"  # OUT/checkpoints/step-N: what --save-every writes and --resume reads


@dataclass
class TrainConfig:
    """What every fine-tuning trainer shares (data, budget, loop, device); each trainer's own settings are
    fields of its subclass (:class:`DetectTrainConfig`, :class:`GenCQTrainConfig`). ``checkpoints`` (not a
    flag) is where checkpoints go, default ``out``/checkpoints (`cq train` passes --out's, not its staging
    directory's).

    A trainer is one subclass, registered (cqtools/cli/trainers.py ``register_trainers``, as a plugin registers
    one): `cq train NAME` and its flags are generated from it (cqtools/cli/train.py ``trainer_command``). Its
    fields with :func:`cqtools.registry.option` are the flags; its class variables name the command
    (``command``), the function that trains on an instance (``run``, "module:function", returning the report),
    the base model's ``--model`` (``base_model``: a role of cqtools/models/roles.py or a name, its default and help),
    what --train and --dev hold, and which report keys the command prints; the subclass's docstring is the
    command's --help."""

    command: ClassVar[str] = ""
    run: ClassVar[str] = ""
    base_model: ClassVar[tuple] = ("", None, "")  # --model: (role or name, default, help)
    train_help: ClassVar[str] = "Training records (JSONL from `cq convert ambignq train_light.json`)."
    dev_help: ClassVar[str] = "Dev records: the weights are scored on them every --eval-every steps and the best kept."
    printed: ClassVar[tuple | None] = None  # the report's keys printed on stdout (None: all but HIDDEN)

    train: str = field(kw_only=True)
    model: str = field(kw_only=True)
    out: str = field(kw_only=True)
    dev: str | None = None
    epochs: int = option(3, min=1)
    batch_size: int = option(16, BATCH_HELP, min=1)
    lr: float = option(5e-5, "AdamW learning rate.")
    # the schedule: linear warm-up from 0 to --lr, then linear decay to 0 at --decay-steps (cqtools/train/loop.py
    # make_optimizer); AmbigQA's and AskCQ's releases warm up 0 steps and decay over 100,000, REFUEL's warms up a
    # tenth of its steps and decays over them (the presets set each: cqtools/presets/)
    warmup_steps: int | None = option(None, "Optimiser steps of linear warm-up from 0 to --lr [default: --warmup-ratio "
                                            "of --decay-steps].", min=0, metavar="N")
    warmup_ratio: float = option(0.1, "Warm-up as a share of --decay-steps, rounded down (when --warmup-steps is "
                                      "unset).", min=0, max=1)
    weight_decay: float = option(0.01, "AdamW weight decay.", min=0)
    no_decay: str = option("none", "Parameters kept out of weight decay: none, or the biases and LayerNorm weights "
                                   "(bias-layernorm, the releases' AdamW groups).", choices=("none", "bias-layernorm"))
    decay_steps: int | None = option(None, "Optimiser steps the learning rate decays linearly over, reaching 0 at "
                                           "the last [default: this run's own steps]; a longer horizon (AmbigQA's "
                                           "and AskCQ's 100,000) stops partway down.", min=1, metavar="N")
    shuffle: bool = option(True, "A seeded shuffle of the examples each epoch, or (--no-shuffle) their order in "
                                 "the file, as AskCQ's DataLoader(shuffle=False) reads them.",
                           flag="--shuffle/--no-shuffle")
    max_steps: int | None = option(None, "Stop after N optimiser steps.", min=0)
    max_seconds: float | None = option(None, "Stop after this much training time.", min=0)
    limit: int | None = option(None, "Use only the first N records of each train file.", min=1)
    dev_limit: int | None = option(None, "Use only the first N dev records.", min=1)
    eval_every: int | None = option(None, "With --dev: score the weights on dev every N steps (default: once per "
                                          "epoch) and at the last step, and keep the best (cq_train.json: best, "
                                          "history).", min=1, metavar="N")
    mixed_precision: str = option("no", "Train in bf16 (GPUs since Ampere, CPUs with bf16) or fp16 (GPUs only) "
                                        "autocast, or float32 (no).", choices=("no", "bf16", "fp16"))
    grad_accum: int = option(1, "Batches whose gradients are summed into one optimiser step (accelerate's "
                                "gradient accumulation).", min=1, metavar="N")
    accumulate: str = option("mean", "How --grad-accum's batches make one step's gradient: the mean of their losses "
                                     "(accelerate's), or their sum, as AmbigQA's and AskCQ's loops call backward on "
                                     "each batch's loss unscaled (the norm clipped at 1 then differs).",
                             choices=("mean", "sum"))
    save_every: int | None = option(None, "Save a checkpoint (weights, optimiser, scheduler, RNG states, data "
                                          "position) into OUT/checkpoints/step-N every N steps; the 2 newest are "
                                          "kept. SIGTERM then saves one after the step under way and stops (exit "
                                          "143).", min=1, metavar="N")
    resume: bool = option(False, "Continue from the newest checkpoint in OUT/checkpoints when there is one (else "
                                 "start, saying so): the same command line serves a requeued job.")
    resume_from: str | None = option(None, "Continue from this checkpoint directory (OUT/checkpoints/step-N).",
                                     metavar="DIR")
    seed: int = CommandSettings.seed
    passages: int = option(3, "Top passages in the input when the records have them (0: question only).", min=0)
    device: str = RunConfig.device
    checkpoints: str | None = None


def patience_option(default: int | None = None, metric: str = "the dev metric"):
    """The ``patience`` field of a trainer that selects on dev: evaluations without a gain before it stops."""
    never = "; default: none, never early" if default is None else ""
    return option(default, f"Dev evaluations without a better {metric} before stopping early (the releases' "
                           f"--wait_step{never}).", min=1, metavar="N")


@dataclass
class DetectTrainConfig(TrainConfig):
    """Fine-tune an encoder as the ambiguity classifier (label: gold.ambiguous).

    Keeps the checkpoint with the best early-stopping score (--select), measured either on
    --dev or on --holdout N records taken out of --train. --preset askcq trains AskCQ's passage
    classifier (BERT-base-cased over the question and 100 passages, 512 tokens, lr 1e-5).

    \b
    Example:
      cq convert ambignq train_light.json > train.jsonl
      cq convert ambignq dev_light.json > dev.jsonl
      cq train detect --train train.jsonl --holdout 1000 --passages 0 --max-length 48 \\
        --batch-size 32 --select auroc --eval-every 50 --out models/detect --max-seconds 1200
      cq detect --method classifier --model models/detect --passages 0 < dev.jsonl \\
        | cq score --task detect --sweep
    """

    command: ClassVar[str] = "detect"
    run: ClassVar[str] = "cqtools.train.detector:train_detect"
    base_model: ClassVar[tuple] = ("train-detect", ENCODER, "Encoder to fine-tune.")
    dev_help: ClassVar[str] = "Dev records for early stopping / the report (or use --holdout)."

    eval_every: int | None = option(None, "Steps between dev evaluations (default: once per epoch).", min=1)
    patience: int | None = option(3, "Dev evaluations without improvement (of --select) before stopping early.",
                                  min=1)
    holdout: int | None = option(None, "Early-stop on N --train records held out by a seeded draw (instead of "
                                       "--dev); their ids go into cq_train.json.", min=1, metavar="N")
    select: str = option("f1", "Checkpoint metric on the early-stopping records: F1 at 0.5 (ties: accuracy), "
                               "AUROC (ties: F1), or the lowest mean cross-entropy (loss, as AskCQ's Trainer keeps "
                               "it).", choices=("f1", "auroc", "loss"))
    input_layout: str = option("pair", "The input: (question, passages) as a pair of segments, the passages cut "
                                       "first; or joined: one sequence \"question[SEP]passage[SEP]...\" cut at its "
                                       "end, segment ids 0 (AskCQ's run_ambiguity_detection.py:441-444); cq detect "
                                       "reads it from cq_train.json.", choices=("pair", "joined"))
    max_length: int = option(detect_stage.MAX_INPUT_TOKENS, "Tokens per input (question [+ passages]); cq detect "
                                                            "reuses the value saved with the model.", min=8)


@dataclass
class GenCQTrainConfig(TrainConfig):
    """Fine-tune a generator on gold CQs (gold.cq, e.g. from `cq convert cambignq` or `--join cambignq:`)
    and, for records without one, silver CQs built from gold DQs (cq gen-cq --method from-dqs).

    Scores dev every --eval-every steps (default once per epoch) and keeps the weights with the
    best CQ BLEU-4, as AskCQ does; reports options P/R/F1 and category accuracy too (against
    gold.cq where present, else the dev silver CQs).

    \b
    Example:
      cq train gen-cq --train train.jsonl --dev dev.jsonl --out models/gencq --max-steps 200
      cq detect < dev.jsonl | cq gen-cq --method seq2seq --model models/gencq
    """

    command: ClassVar[str] = "gen-cq"
    run: ClassVar[str] = "cqtools.train.cq_generator:train_gen_cq"
    base_model: ClassVar[tuple] = ("train-gen-cq", LLM, "Generator to fine-tune: seq2seq (encoder-decoder) if it is "
                                                        "one, else a causal LM.")

    epochs: int = option(1, min=1)
    # the input layout's defaults (cqtools/train/cq_generator.py LAYOUT_DEFAULTS): cq's, or AskCQ's release's
    batch_size: int | None = option(None, BATCH_HELP + " [default: 8; 10 with --input-layout askcq, AskCQ's "
                                                       "run_cq_training.sh]", min=1)
    lr: float | None = option(None, "AdamW learning rate. [default: 5e-05; 1e-05 with --input-layout askcq, AskCQ's "
                                    "cli.py]")
    warmup_ratio: float | None = option(None, "Warm-up as a share of --decay-steps, rounded down (when "
                                              "--warmup-steps is unset). [default: 0.1; 0 with --input-layout askcq, "
                                              "AskCQ's cli.py:106 warmup_steps 0]", min=0, max=1)
    weight_decay: float | None = option(None, "AdamW weight decay. [default: 0.01; 0 with --input-layout askcq, "
                                              "AskCQ's cli.py:96]", min=0)
    decay_steps: int | None = option(None, "Optimiser steps the learning rate decays linearly over, reaching 0 at "
                                           "the last. [default: this run's own steps; 100000 with --input-layout "
                                           "askcq, AskCQ's run.py:144-146]", min=1, metavar="N")
    passages: int | None = option(None, "Top passages in the input when the records have them (0: question only). "
                                        "[default: 3; 100 with --input-layout askcq, --max-passage-tokens deciding]",
                                  min=0)
    max_passage_tokens: int | None = option(None, "Whole passages in order while the question, the answers and they "
                                                  "fit this many tokens, as cq gen-cq --max-passage-tokens reads them; "
                                                  "inputs are cut there. [default: unset, each passage cut to 60 "
                                                  "words, inputs cut at 384 tokens; 1024 with --input-layout askcq, "
                                                  "AskCQ's max_token_nums]", min=1)
    passage_cut: str | None = option(None, "With --max-passage-tokens: whole (passages that fit, whole) or last (the "
                                           "first that does not fit read too, cut where the budget is full), as cq "
                                           "gen-cq --passage-cut reads them. [default: whole; last with --input-layout "
                                           "askcq, AskCQ's CQDataset.py:119-126]", choices=("whole", "last"))
    with_answers: str | None = option(None, "Train on \"AQ [SEP] answers [SEP] passages\" with gold answers (the "
                                            "AskCQ setting).", choices=("gold",))
    targets: str = option("auto", "auto: a record's gold CQ (gold.cq, CAmbigNQ's) where it has one, else the silver "
                                  "CQ built from its gold DQs; silver: silver CQs only. cq_train.json counts each "
                                  "(targets).", choices=("auto", "silver"))
    input_layout: str = option("cq", "The input as `cq gen-cq --method seq2seq --input-layout` writes it: cq's, or "
                                     "AskCQ's CQDataset layout (needs a tokenizer with sep/bos/eos tokens, e.g. "
                                     "BART's). cq gen-cq reads it from the model's cq_train.json.",
                               choices=("cq", "askcq"))
    grad_accum: int | None = option(None, "Batches whose gradients are summed into one optimiser step (accelerate's "
                                          "gradient accumulation). [default: 1; 2 with --input-layout askcq, AskCQ's "
                                          "run_cq_training.sh]", min=1, metavar="N")
    eval_every: int | None = option(None, "With --dev: score the weights on dev every N steps and at the last step, "
                                          "and keep the best (cq_train.json: best, history). [default: once per "
                                          "epoch; 250 with --input-layout askcq: AskCQ's eval_period of 500 "
                                          "batches]", min=1, metavar="N")
    patience: int | None = option(None, "Dev evaluations without a better CQ BLEU before stopping early. [default: "
                                        "none, never early; 10 with --input-layout askcq, AskCQ's --wait_step]",
                                  min=1)
    num_beams: int | None = option(None, "Beams when dev CQs are generated to choose the weights kept. [default: 1; "
                                         "4 with --input-layout askcq, AskCQ's run.py:262-266]", min=1)
    max_cq_tokens: int | None = option(None, "Tokens generated per dev CQ. [default: 48; 127 with --input-layout "
                                             "askcq: generate's max_length 128 (run_cq_training.sh:17, run.py:256) "
                                             "less BART's start token]", min=1)
    accumulate: str | None = option(None, "How --grad-accum's batches make one step's gradient: the mean of their "
                                          "losses, or their sum. [default: mean; sum with --input-layout askcq, "
                                          "AskCQ's run.py:190-197]", choices=("mean", "sum"))
    shuffle: bool | None = option(None, "A seeded shuffle of the examples each epoch, or (--no-shuffle) their "
                                        "order in the file. [default: shuffled; in file order with --input-layout "
                                        "askcq, AskCQ's run.py:84 shuffle=False]", flag="--shuffle/--no-shuffle")
    two_options: str = option(FromDqsOptions.two_options, "Silver CQs with two options as \"A or B\" or \"A, or B\" "
                                                          "(AskCQ's form).", choices=("or", "comma"))
