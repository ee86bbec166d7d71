"""`cq train rerank`: fine-tune the cross-encoder `cq rerank --model DIR` reads (REFUEL's reranker recipe,
cqtools/train/rerank.py). Registered beside cq's other trainers (cqtools/cli/trainers.py), built from the helpers
they share in cqtools/cli/train.py."""
from __future__ import annotations

import click

from ..models.roles import RERANKER
from ..train.rerank import RerankTrainConfig
from ..train.settings import COMMON_SETTINGS
from .declared import declared_flags
from .options import model_option
from .train import common_options, fine_tune


@click.command(name="rerank")
@model_option("train-rerank", RERANKER, help="Cross-encoder (or encoder, given a new 1-label head) to fine-tune "
                                             "(REFUEL's: bert-large-uncased).")
@common_options(RerankTrainConfig)
@declared_flags(RerankTrainConfig, exclude=COMMON_SETTINGS)
def rerank_cmd(quiet, dtype, out, overwrite, train_path, dev_path, **kwargs):
    """Fine-tune a cross-encoder as REFUEL trains its reranker: each question against one passage holding a gold
    answer and 31 retrieved ones holding none, cross-entropy over the group.

    Records need gold answers (gold.annotations, from `cq convert ambignq`) and passages (`cq
    retrieve`: BM25's are the hard negatives). With --dev, keeps the weights with the best mean
    recall@10/20/50/100 of answer passages (scored every --eval-every steps); the directory is
    what `cq rerank --model DIR` and `cq answer --reranker DIR` load.

    \b
    Example:
      cq retrieve --index idx --method bm25 --hits 100 < train.jsonl > train.ret.jsonl
      cq retrieve --index idx --method bm25 --hits 100 < dev.jsonl > dev.ret.jsonl
      cq train rerank --train train.ret.jsonl --dev dev.ret.jsonl --out models/rerank --max-steps 2000
      cq retrieve --index idx --hits 100 < questions.jsonl | cq rerank --model models/rerank --top 10
    """
    from ..train.rerank import train_rerank

    fine_tune(train_rerank, RerankTrainConfig, out, overwrite, quiet, train_path, dev_path, kwargs)
