"""`cq train NAME`: fine-tune the models the stages load. Each trainer's command is generated from its settings
class (a :class:`cqtools.train.settings.TrainConfig` subclass registered in cli/trainers.py): its docstring is the
help, its declared fields the flags (:func:`trainer_command`). `cq train combiner` (a logistic fit, no training
loop) and `cq train compact` are written here."""
from __future__ import annotations

import json
import logging
import os

import click

from ..errors import ResourceError
from ..outputs import model_directory
from ..train.combiner import CombinerConfig
from ..train.run import process_rank
from ..train.settings import CHECKPOINTS, COMMON_SETTINGS, TrainConfig
from .declared import declared_flags
from .method_flags import preset_option
from .options import compose, device_option, model_option, seed_option

HIDDEN = ("config", "history", "holdout_ids", "first_batch", "schedule")  # report keys not printed on stdout


overwrite_option = click.option(
    "--overwrite", is_flag=True,
    help="Replace the model already in --out (the new one is written beside it and swapped in when training "
         "ends well; a failed or killed run keeps the old one).")


def _echo(summary: dict, staging: str, out: str) -> None:
    click.echo(json.dumps({"out": out, **summary}).replace(json.dumps(staging)[1:-1], json.dumps(out)[1:-1]))


def _trained(out: str, overwrite: bool, quiet: bool, train) -> tuple[dict, str] | None:
    """``train(directory, checkpoints)``'s report and the staging directory it wrote the model to (swapped in as
    ``out`` when it ends well; checkpoints go to OUT/checkpoints, which outlive a killed run). Under `accelerate
    launch` only the main process writes and prints: the others train into a scratch folder, quietly (None)."""
    import tempfile

    if quiet or process_rank() != 0:
        logging.getLogger("cqtools").setLevel(logging.WARNING)
    checkpoints = os.path.join(out, CHECKPOINTS)
    if process_rank() != 0:
        with tempfile.TemporaryDirectory() as scratch:
            train(scratch, checkpoints)
        return None
    with model_directory(out, overwrite, keep=CHECKPOINTS) as staging:
        report = train(staging, checkpoints)
    return report, staging


class _Trainers(click.Group):
    """cq train's subcommands: the registered trainers (cq's own below and plugins', cqtools/registry.py TRAINERS)."""

    def list_commands(self, ctx):
        from ..registry import TRAINERS

        return sorted(TRAINERS.names())

    def get_command(self, ctx, name):
        from ..registry import TRAINERS

        if name not in TRAINERS.names():
            return None
        trainer = TRAINERS.get(name)
        made = trainer.options_class
        if made is not None and issubclass(made, TrainConfig):  # a trainer registered by its settings
            return _COMMANDS.setdefault(made, trainer_command(made))
        return trainer.factory  # a click command of its own (combiner, compact, a plugin's)


_COMMANDS: dict = {}


@click.group(name="train", cls=_Trainers)
def cli():
    """Fine-tune the models cq's stages load: the ambiguity classifier (detect), the CQ generator (gen-cq), the
    readers (reader, spanseqgen, fid), the question-disambiguation model (qd), the verifier, the combiner.

    Each writes a model directory plus a cq_train.json report, and prints the report's
    summary as one JSON object on stdout.

    \b
    Example:
      cq convert ambignq train_light.json > train.jsonl
      cq train detect --train train.jsonl --holdout 1000 --out models/detect --max-seconds 1200
      cq detect --method classifier --model models/detect < dev.jsonl | cq score --task detect
    """


def trainer_command(settings: type) -> click.Command:
    """`cq train NAME` of a :class:`TrainConfig` subclass: --preset, --model (its ``base_model``), --train, --dev,
    --out, --overwrite, the loop's flags and then the trainer's own (its declared fields), --seed, --device, -q. It
    builds the settings, trains in a staging directory (:func:`_trained`) and prints the report's summary."""
    role, default, model_help = settings.base_model

    def run(quiet, train_path, dev_path, out, overwrite, **kwargs):
        import importlib

        module, name = settings.run.split(":")
        train = getattr(importlib.import_module(module), name)  # (the registered factory is the same function)
        _refuse_finished(out, kwargs, overwrite)
        done = _trained(out, overwrite, quiet, lambda where, checkpoints: train(settings(
            train=train_path, dev=dev_path, out=where, checkpoints=checkpoints, **kwargs)))
        if done:
            report, staging = done
            shown = settings.printed or [k for k in report if k not in HIDDEN]
            _echo({k: report[k] for k in shown if k in report}, staging, out)

    decorate = compose(
        preset_option(f"train {settings.command}"),
        model_option(role, default, help=model_help),
        click.option("--train", "train_path", required=True, type=click.Path(dir_okay=False),
                     help=settings.train_help),
        click.option("--dev", "dev_path", type=click.Path(dir_okay=False), default=None, help=settings.dev_help),
        click.option("--out", required=True, type=click.Path(file_okay=False),
                     help="Directory to write the model to."),
        overwrite_option,
        declared_flags(settings, *COMMON_SETTINGS),
        declared_flags(settings, exclude=(*COMMON_SETTINGS, "seed", "device")),
        seed_option,
        device_option,
        click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr."),
    )
    return click.command(name=settings.command, help=settings.__doc__)(decorate(run))


def _refuse_finished(out: str, settings: dict, overwrite: bool) -> None:
    """--resume into an --out holding a finished model: there is nothing to continue (and --overwrite would train
    again from the start); say so."""
    if not (settings.get("resume") or settings.get("resume_from")) or overwrite:
        return
    path = os.path.join(out, "cq_train.json")
    if os.path.exists(path):
        with open(path) as fh:
            done = json.load(fh)
        raise ResourceError(f"{out} holds a finished run ({done.get('steps')} steps, stopped: {done.get('stopped')}): "
                            "--resume has nothing to continue and its model is ready to use; to train again from "
                            "the start pass --overwrite, or give another --out")


@click.command(name="combiner")
@click.option("--train", "train_path", required=True, type=click.Path(dir_okay=False),
              help="Records with gold labels, retrieved (and answered, for `answers`) as at inference.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Directory to write combiner.json to.")
@overwrite_option
@click.option("--features", default="classifier,titles,namesakes,parens", show_default=True,
              help="Signals to combine: classifier, titles, namesakes, parens, scores, answers (see `cq detect "
                   "--method combined`). `scores` (the retriever's score shape) is opt-in: on the shared corpus it "
                   "learns how the corpus was built (docs/benchmarks/detect_combined.md).")
@click.option("--classifier", type=click.Path(file_okay=False), default=None,
              help="A `cq train detect` model directory (for the classifier signal).")
@declared_flags(CombinerConfig, exclude=("device",),
                types={"validation": click.FloatRange(0, 1, min_open=True, max_open=True)})
@compose(seed_option, device_option)
@click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr.")
def combiner_cmd(quiet, train_path, features, out, overwrite, **kwargs):
    """Fit the combined ambiguity detector (`cq detect --method combined --model DIR`).

    A logistic model over the classifier's logit and retrieval / reader signals, fit on the
    records whose id hashes outside --validation; threshold by cross-validated accuracy on that
    part; AUROC, accuracy and F1 on the validation part with 95% bootstrap intervals, each signal
    alone, and the paired AUROC difference to the classifier alone.

    \b
    Example:
      cq retrieve --index idx --method bm25 --hits 10 < dev.jsonl > dev.ret.jsonl
      cq train combiner --train dev.ret.jsonl --classifier models/detect --out models/combined
      cq retrieve --index idx --method bm25 --hits 10 < questions.jsonl \\
        | cq detect --method combined --model models/combined
    """
    from ..stages.detect.combined import parse_features
    from ..train.combiner import train_combiner

    if quiet:
        logging.getLogger("cqtools").setLevel(logging.WARNING)
    with model_directory(out, overwrite) as staging:
        report = train_combiner(CombinerConfig(train=train_path, features=parse_features(features), out=staging,
                                               **kwargs))
    _echo({k: report[k] for k in ("train_records", "threshold", "weights", "retrieval", "validation")}, staging, out)


@click.command(name="compact")
@click.argument("src", type=click.Path(exists=True, file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Directory to write the compact model to.")
@overwrite_option
def compact_cmd(src, out, overwrite):
    """Rewrite a trained model directory (detect, reader) with int8 weights, one scale per row: a
    quarter of the size, loaded back as float32 (cqtools/models/compact.py). cq ships its
    classifier and reader this way (`make ship-models`).

    \b
    Example:
      cq train compact models/reader --out cqtools/shipped/reader --overwrite
      cq answer --mode multi --model cqtools/shipped/reader < reranked.jsonl
    """
    from ..models.compact import compact

    if os.path.realpath(src) == os.path.realpath(out):
        raise ResourceError(f"--out {out} is SRC itself: compacting in place would delete the full-precision weights "
                            f"it is made from; pass another --out")
    if os.path.commonpath([os.path.realpath(src), os.path.realpath(out)]) == os.path.realpath(out):
        raise ResourceError(f"--out {out} holds SRC {src}: replacing it would delete the full-precision weights "
                            f"the compact ones are made from; pass another --out")
    with model_directory(out, overwrite) as staging:
        summary = compact(src, staging)
    click.echo(json.dumps({"out": out, **summary}))
