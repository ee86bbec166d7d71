"""`cq train detect|gen-cq|reader|combiner`: fine-tune the models that `cq detect`, `cq gen-cq` and
`cq answer --reader extractive` load."""
from __future__ import annotations

import json
import logging
import os

import click

from ..errors import ResourceError
from ..outputs import model_directory
from .options import compose, device_options, model_option, seed_option
from ..models.roles import ENCODER, LLM
from ..train.combiner import CombinerConfig
from ..train.loop import COMMON_SETTINGS, LOOP_SETTINGS, DetectTrainConfig, GenCQTrainConfig
from ..train.run import process_rank
from ..train.settings import CHECKPOINTS
from ..train.span_reader import ReaderTrainConfig
from ..train.fid import FiDTrainConfig
from ..train.qd import QDTrainConfig
from ..train.spanseqgen import BASE_MODEL, SpanSeqGenTrainConfig
from ..train.verifier import VerifierTrainConfig
from .declared import declared_flags
from .method_flags import preset_option


def _loop(settings: type):
    """The training loop's flags, generated from the trainer's configuration class (its defaults)."""
    return declared_flags(settings, *LOOP_SETTINGS)


def _common(settings: type):
    return compose(
        click.option("--train", "train_path", required=True, type=click.Path(dir_okay=False),
                     help="Training records (JSONL from `cq convert ambignq train_light.json`)."),
        click.option("--dev", "dev_path", type=click.Path(dir_okay=False), default=None,
                     help="Dev records for early stopping / the report (detect: or use --holdout)."),
        click.option("--out", required=True, type=click.Path(file_okay=False), help="Directory to write the model to."),
        overwrite_option,
        _loop(settings),
        declared_flags(settings, "passages"),
        seed_option,
        device_options,
        click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr."),
    )


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

        return TRAINERS.get(name).factory if name in TRAINERS.names() else None


@click.group(name="train", cls=_Trainers)
def cli():
    """Fine-tune the ambiguity classifier (detect), the CQ generator (gen-cq) or the span reader (reader).

    Each writes a model directory plus a cq_train.json report, and prints the report's
    summary as one JSON object on stdout.

    \b
    Example:
      cq convert ambignq train_light.json > train.jsonl
      cq train detect --train train.jsonl --holdout 1000 --out models/detect --max-seconds 1200
      cq detect --method classifier --model models/detect < dev.jsonl | cq score --task detect
    """


def _run(task: str, quiet: bool, **kwargs) -> None:
    from ..train.detector import train_detect
    from ..train.cq_generator import train_gen_cq

    kwargs.pop("dtype", None)
    out, overwrite = kwargs.pop("out"), kwargs.pop("overwrite")
    settings, train = (DetectTrainConfig, train_detect) if task == "detect" else (GenCQTrainConfig, train_gen_cq)
    paths = {"train": kwargs.pop("train_path"), "dev": kwargs.pop("dev_path")}
    done = _trained(out, overwrite, quiet, lambda where, checkpoints: train(
        settings(**paths, out=where, checkpoints=checkpoints, **kwargs)))
    if done:
        report, staging = done
        _echo({k: v for k, v in report.items() if k not in ("history", "config", "holdout_ids")}, staging, out)


@click.command(name="detect")
@preset_option("train detect")
@model_option("train-detect", ENCODER, help="Encoder to fine-tune.")
@_common(DetectTrainConfig)
@declared_flags(DetectTrainConfig, exclude=COMMON_SETTINGS)
def detect_cmd(quiet, **kwargs):
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
    _run("detect", quiet, **kwargs)


@click.command(name="gen-cq")
@model_option("train-gen-cq", LLM,
              help="Generator to fine-tune: seq2seq (encoder-decoder) if it is one, else a causal LM.")
@_common(GenCQTrainConfig)
@declared_flags(GenCQTrainConfig, exclude=COMMON_SETTINGS)
def gen_cq_cmd(quiet, **kwargs):
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
    _run("gen-cq", quiet, **kwargs)


@click.command(name="spanseqgen")
@preset_option("train spanseqgen")
@model_option("train-spanseqgen", BASE_MODEL, help="Seq2seq model to fine-tune (AmbigQA's: BART-large).")
@_common(SpanSeqGenTrainConfig)
@declared_flags(SpanSeqGenTrainConfig, exclude=COMMON_SETTINGS)
def spanseqgen_cmd(quiet, dtype, out, overwrite, train_path, dev_path, **kwargs):
    """Fine-tune AmbigQA's SpanSeqGen: a seq2seq model generating every answer as one sequence.

    The input is the question and its passages in AmbigQA's layout (records with passages, from
    `cq retrieve`); the targets are the gold answers found in them, joined by <SEP>. With --dev,
    keeps the weights with the best dev F1_ans (scored every --eval-every steps); the directory
    is what `cq answer --reader seqgen` loads.
    --preset ambigqa trains with AmbigQA's recipe (BART-large, batch 24, lr 5e-6, beam 4);
    --preset askcq trains AskCQ's clarification-based QA reader instead (--input-layout askcq:
    the question revised by each gold CQ option -> its answer; read by `cq answer --mode cq
    --reader seqgen --revised-question askcq`).

    \b
    Example:
      cq retrieve --index idx --hits 100 < train.jsonl > train.ret.jsonl
      cq train spanseqgen --train train.ret.jsonl --dev dev.ret.jsonl --out models/seqgen --max-steps 2000
      cq retrieve --index idx --hits 100 < dev.jsonl \\
        | cq answer --reader seqgen --model models/seqgen --mode multi | cq score --task answers
    """
    from ..train.spanseqgen import train_spanseqgen

    _fine_tune(train_spanseqgen, SpanSeqGenTrainConfig, out, overwrite, quiet, train_path, dev_path, kwargs)


def _fine_tune(train, config, out, overwrite, quiet, train_path, dev_path, settings: dict) -> None:
    """Run a seq2seq trainer (spanseqgen, qd, fid) on its settings through :func:`_trained` (staging, checkpoints,
    --overwrite) and print its report."""
    done = _trained(out, overwrite, quiet, lambda where, checkpoints: train(config(
        train=train_path, dev=dev_path, out=where, checkpoints=checkpoints, **settings)))
    if done:
        report, staging = done
        _echo({k: v for k, v in report.items() if k != "config"}, staging, out)


common_options, fine_tune = _common, _fine_tune  # for trainers whose command has its own module (cli/train_rerank.py)


@click.command(name="qd")
@preset_option("train qd")
@model_option("train-qd", BASE_MODEL, help="Seq2seq model to fine-tune (AmbigQA's: BART-large).")
@_common(QDTrainConfig)
@declared_flags(QDTrainConfig, exclude=COMMON_SETTINGS)
def qd_cmd(quiet, dtype, out, overwrite, train_path, dev_path, **kwargs):
    """Fine-tune AmbigQA's question-disambiguation model: one DQ per answer of an ambiguous question.

    The input is the answer, the question, the other answers and the passages in AmbigQA's
    layout (records with passages, from `cq retrieve`); the target is the gold DQ of that answer
    (multipleQAs annotations). With --dev, keeps the weights with the best dev EDIT-F1 given the
    gold answers (scored every --eval-every steps). The directory
    is what `cq disambiguate --method qd --model DIR` loads. --preset ambigqa trains with AmbigQA's recipe (BART-large, beam 4).

    \b
    Example:
      cq retrieve --index idx --hits 100 < train.jsonl > train.ret.jsonl
      cq train qd --train train.ret.jsonl --out models/qd --max-steps 2000
      cq answer --reader seqgen --model models/seqgen --mode multi < dev.ret.jsonl \\
        | cq disambiguate --method qd --model models/qd | cq score --task ambigqa
    """
    from ..train.qd import train_qd

    _fine_tune(train_qd, QDTrainConfig, out, overwrite, quiet, train_path, dev_path, kwargs)


@click.command(name="fid")
@preset_option("train fid")
@model_option("train-fid", BASE_MODEL, help="Seq2seq model to fine-tune (REFUEL's: BART-large; T5 works too).")
@_common(FiDTrainConfig)
@declared_flags(FiDTrainConfig, exclude=COMMON_SETTINGS)
def fid_cmd(quiet, dtype, out, overwrite, train_path, dev_path, **kwargs):
    """Fine-tune REFUEL's Fusion-in-Decoder reader: each passage encoded with the question, one decoder over all.

    The targets are the gold answers found in the passages, joined by <SEP> (records with
    passages, from `cq retrieve`). With --dev, keeps the weights with the best dev F1_ans (scored
    every --eval-every steps); the directory is what
    `cq answer --reader fid` loads.
    --preset refuel trains with REFUEL's recipe (BART-large, 100 passages, batch 64, lr 3e-5).

    \b
    Example:
      cq retrieve --index idx --hits 100 < train.jsonl > train.ret.jsonl
      cq train fid --train train.ret.jsonl --out models/fid --passages 10 --max-steps 2000
      cq retrieve --index idx --hits 100 < dev.jsonl \\
        | cq answer --reader fid --model models/fid --mode multi | cq score --task ambigqa
    """
    from ..train.fid import train_fid

    _fine_tune(train_fid, FiDTrainConfig, out, overwrite, quiet, train_path, dev_path, kwargs)


@click.command(name="verifier")
@preset_option("train verifier")
@model_option("train-verifier", BASE_MODEL, help="Seq2seq model to fine-tune (REFUEL's: BART-large, first trained "
                                                 "as its NQ-open reader).")
@_common(VerifierTrainConfig)
@declared_flags(VerifierTrainConfig, exclude=COMMON_SETTINGS)
def verifier_cmd(quiet, dtype, out, overwrite, train_path, dev_path, **kwargs):
    """Fine-tune REFUEL's LM verifier: a Fusion-in-Decoder model answering gold disambiguated questions.

    Each gold QA pair (a multipleQAs pair's DQ, a singleAnswer's question) is read with each of
    the record's passages (records from `cq retrieve`); the target is its first alias found in
    them. With --dev, keeps the weights with the best dev EM on the gold QA pairs. The directory
    is what `cq answer --verify --verifier-model DIR` scores (DQ, answer) pairs with.
    --preset refuel trains with REFUEL's recipe (BART-large, 100 passages, batch 64, lr 3e-5).

    \b
    Example:
      cq train verifier --train train.ret.jsonl --out models/verifier --passages 10 --max-steps 2000
      cq answer --preset refuel --verifier-model models/verifier < dev.ret.jsonl | cq score --task ambigqa
    """
    from ..train.verifier import train_verifier

    _fine_tune(train_verifier, VerifierTrainConfig, out, overwrite, quiet, train_path, dev_path, kwargs)


@click.command(name="reader")
@model_option("train-reader", ENCODER, help="Encoder to put the span head on.")
@click.option("--train", "train_path", required=True, type=click.Path(dir_okay=False),
              help="Records with passages (`cq retrieve` output) and gold answers; --holdout draws from these.")
@click.option("--more-train", multiple=True, type=click.Path(dir_okay=False),
              help="Further training records with passages (e.g. AmbigNQ train or NQ-open); never held out, and "
                   "held-out ids / questions are dropped from them. Repeatable.")
@click.option("--dev", "dev_path", type=click.Path(dir_okay=False), default=None,
              help="Validation records with passages (or use --holdout).")
@declared_flags(ReaderTrainConfig, "holdout")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Directory to write the model to.")
@overwrite_option
@_loop(ReaderTrainConfig)
@declared_flags(ReaderTrainConfig, exclude=(*LOOP_SETTINGS, "holdout"))
@compose(seed_option, device_options)
@click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr.")
def reader_cmd(quiet, train_path, dev_path, more_train, dtype, out, overwrite, **kwargs):
    """Train the extractive span reader by distant supervision (gold aliases found in passages).

    Each training question's first passage holding a gold alias is trained to that span, its
    top passages holding none to "no answer" ([CLS]). Reports single-answer EM/F1 on the held-out
    (or --dev) records; the directory is what `cq answer --reader extractive` loads.

    \b
    Example:
      cq retrieve --index idx --hits 10 < dev.jsonl > dev.ret.jsonl
      cq retrieve --index idx --hits 10 < train.jsonl > train.ret.jsonl
      cq train reader --train dev.ret.jsonl --holdout 300 --more-train train.ret.jsonl \\
        --out models/reader --max-seconds 1200
      cq retrieve --index idx --hits 10 < questions.jsonl \\
        | cq answer --reader extractive --model models/reader --mode multi
    """
    from ..train.span_reader import train_reader

    done = _trained(out, overwrite, quiet, lambda where, checkpoints: train_reader(ReaderTrainConfig(
        train=train_path, dev=dev_path, more_train=tuple(more_train), out=where, checkpoints=checkpoints, **kwargs)))
    if done:
        report, staging = done
        keep = ("steps", "stopped", "train_seconds", "train_records", "examples", "first_loss", "last_loss",
                "validation")
        _echo({k: report[k] for k in keep}, staging, out)


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
@declared_flags(CombinerConfig, types={"validation": click.FloatRange(0, 1, min_open=True, max_open=True)})
@compose(seed_option, device_options)
@click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr.")
def combiner_cmd(quiet, train_path, features, dtype, out, overwrite, **kwargs):
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
