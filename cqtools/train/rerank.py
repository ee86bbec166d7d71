"""``cq train rerank``: REFUEL's passage reranker, a cross-encoder fine-tuned on each question's retrieved passages
(amzn/refuel-open-domain-qa @159090e, BertReranker trained by ``--task rrk``); the directory is what
``cq rerank --model DIR`` (and ``cq answer --reranker DIR``) loads.

As the release builds it:

- **Positives and negatives** (RerankData.py:178-196, 248-265): a retrieved passage is positive when the
  normalised text of one of the record's gold aliases (every annotation's, RerankData.py:354-363) occurs in its
  normalised text; where the record names its gold pages (AmbigNQ's full format: ``gold.nq_doc_title``,
  ``gold.viewed_doc_titles``, RerankData.py:364-365) only positives from those pages count, unless none is
  (then the first 20 answer passages). Every other retrieved passage is a negative (cq's are BM25's hard ones when
  ``cq retrieve --method bm25`` retrieved them); the first 20 positives and 200 negatives are kept, and a question
  with no positive is left out.
- **The loss** (models/reranker.py:50-58, DataLoader.py:407-429): at each step a question's group is
  ``train_positives`` of its positives and ``train_negatives`` of its negatives, each drawn afresh (a seeded
  permutation, torch's RNG: checkpoints carry it), scored by the cross-encoder and trained with cross-entropy over
  the group, a positive's label its slot; summed over the positives and divided by the number of questions.
- **The schedule** (scripts/reranker/train_nq.sh:34-48): 1 positive + 31 negatives, 16 questions a batch, lr 1e-5,
  10 epochs, dev scored every 10 steps and the best kept (run.py:842-899), never stopped early (wait_step 1e8).
  cq's loop already warms up over a tenth of the steps, decays weights by 0.01 and clips gradients to norm 1
  (train_nq.sh:41-43).
- **The dev score** (RerankData.py:321-336): the mean over k in 10, 20, 50, 100 of recall@k, the share of dev
  questions with an answer passage in the reranked top k (``dev_passages`` read a question, test_M 200).

Where cq differs, on purpose: the pair is what ``cq rerank`` reads (question, "title\\ntext", cut to
``max_length`` tokens by the tokenizer: the release's 32 question + 128 passage tokens are 160 in all), the head is
the sequence classifier's (pooler + linear, what cross-encoders load as; the release's a linear layer on [CLS]),
a question with fewer negatives than asked scores the ones it has (the release pads its group with empty inputs),
and the base model is any cross-encoder or encoder (REFUEL's: bert-large-uncased; cq's default, the offline
ms-marco-MiniLM-L-12-v2)."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import ClassVar

from ..config import RunConfig
from ..errors import InputError, ResourceError
from ..metrics.normalize import normalize_answer
from ..records import GOLD, PASSAGES
from ..models.roles import RERANKER
from ..registry import option
from ..stages.rerank import passage_text
from .best import BestOnDev, dev_report, eval_steps, every_of, metric_key
from .loop import load_records, log, peak_rss_mb, set_seed, start, total_steps, train_loop, write_report
from .settings import TrainConfig
from .span_reader import gold_aliases

TASK = "rerank"
MAX_POSITIVES = 20  # RerankData.py:262,264: positives[:20]
MAX_NEGATIVES = 200  # RerankData.py:265: negatives[:200]
RECALL_AT = (10, 20, 50, 100)  # RerankData.py:324,334-335: the dev score averages recall@k for k <= 100
GOLD_TITLES = ("nq_doc_title", "viewed_doc_titles")  # AQRerankerData's gold_passage_title (RerankData.py:364-365)


@dataclass
class RerankTrainConfig(TrainConfig):
    """Fine-tune a cross-encoder as REFUEL trains its reranker: each question against one passage holding a gold
    answer and 31 retrieved ones holding none, cross-entropy over the group.

    Records need gold answers (gold.annotations, from `cq convert ambignq`) and passages (`cq
    retrieve`: BM25's are the hard negatives). With --dev, keeps the weights with the best mean
    recall@10/20/50/100 of answer passages (scored every --eval-every steps); the directory is
    what `cq rerank --model DIR` and `cq answer --reranker DIR` load. The settings are the shared
    ones with REFUEL's values (scripts/reranker/train_nq.sh) and the groups' own.

    \b
    Example:
      cq retrieve --index idx --method bm25 --hits 100 < train.jsonl > train.ret.jsonl
      cq retrieve --index idx --method bm25 --hits 100 < dev.jsonl > dev.ret.jsonl
      cq train rerank --train train.ret.jsonl --dev dev.ret.jsonl --out models/rerank --max-steps 2000
      cq retrieve --index idx --hits 100 < questions.jsonl | cq rerank --model models/rerank --top 10

    On a machine without a GPU, split each batch: with the defaults, `--batch-size 2 --grad-accum 8` averages
    the same 16 questions' losses into each step (the negatives drawn and dropout differ) with 64 pairs a pass;
    a CPU run with more is told the split.
    """

    command: ClassVar[str] = "rerank"
    run: ClassVar[str] = "cqtools.train.rerank:train_rerank"
    base_model: ClassVar[tuple] = ("train-rerank", RERANKER, "Cross-encoder (or encoder, given a new 1-label head) to "
                                                            "fine-tune (REFUEL's: bert-large-uncased).")

    epochs: int = option(10, "Passes over the training questions (REFUEL: 10, train_nq.sh:45).", min=1)
    batch_size: int = option(16, "Questions per batch on each process, each with its group of passages (REFUEL: "
                                 "16, train_nq.sh:38). One batch is one forward pass over batch x (positives + "
                                 "negatives) pairs, 512 with the defaults: on a CPU, 16 x 16 pairs peaked at 23.7 GB "
                                 "RSS and 4 x 8 at 6.0 GB; split it with --grad-accum (the defaults: --batch-size 2 "
                                 "--grad-accum 8; docs/benchmarks/first-contact.md).", min=1)
    lr: float = option(1e-5, "AdamW learning rate (REFUEL: 1e-5, train_nq.sh:40).")
    eval_every: int | None = option(10, "With --dev: score the weights on dev every N steps and at the last, and "
                                        "keep the best mean recall (REFUEL: 10, train_nq.sh:48).", min=1, metavar="N")
    passages: int | None = option(None, "Retrieved passages per training question searched for positives and "
                                        "negatives [default: all the record has].", min=1)
    train_positives: int = option(1, "Positives in a question's group at each step (REFUEL's train_MP: 1).", min=1)
    train_negatives: int = option(31, "Negatives in a question's group at each step (REFUEL's train_MN: 31).",
                                  min=1)
    dev_passages: int = option(200, "Passages reranked per dev question (REFUEL's test_M: 200).", min=1)
    max_length: int = option(160, "Tokens per (question, passage) pair (REFUEL: 32 + 128, RerankData.py:282); saved "
                                  "as the model's length, which cq rerank reads it at.", min=16)


def has_answer(aliases: list[str], passage: dict) -> bool:
    """Whether a normalised alias occurs in the passage's normalised text (RerankData.py:192-194)."""
    text = normalize_answer(str(passage.get("text") or ""))
    return any(alias and alias in text for alias in aliases)


def groups(record: dict, passages: int | None) -> tuple[list[dict], list[dict]]:
    """(positives, negatives) of one record's retrieved passages, as RerankData.py:248-265 picks them."""
    found = list(record.get(PASSAGES) or [])[:passages]
    aliases = [normalize_answer(a) for a in gold_aliases(record)]
    holding = [n for n, p in enumerate(found) if has_answer(aliases, p)]
    if not holding:
        return [], []
    gold = record.get(GOLD) or {}
    titles = {normalize_answer(t) for key in GOLD_TITLES
              for t in ([gold[key]] if isinstance(gold.get(key), str) else gold.get(key) or [])}
    chosen = [n for n in holding if normalize_answer(str(found[n].get("title") or "")) in titles] if titles else []
    chosen = chosen or holding[:MAX_POSITIVES]
    negatives = [p for n, p in enumerate(found) if n not in set(chosen)]
    return [found[n] for n in chosen[:MAX_POSITIVES]], negatives[:MAX_NEGATIVES]


def rerank_examples(records: list[dict], cfg: RerankTrainConfig) -> list[tuple[str, list[str], list[str]]]:
    """(question, positive texts, negative texts) of every record with a positive, as cq rerank reads them."""
    out = []
    for record in records:
        positives, negatives = groups(record, cfg.passages)
        if positives:
            out.append((str(record["question"]), [passage_text(p) for p in positives],
                        [passage_text(p) for p in negatives]))
    return out


def draw_group(example: tuple[str, list[str], list[str]], cfg: RerankTrainConfig) -> tuple[list[str], int]:
    """One step's group of a question (DataLoader.py:407-422): up to ``train_positives`` of its positives, then up
    to ``train_negatives`` of its negatives, each a fresh permutation's first; and how many positives lead it."""
    import torch

    _, positives, negatives = example
    pos = [positives[i] for i in torch.randperm(len(positives)).tolist()[:cfg.train_positives]]
    neg = [negatives[i] for i in torch.randperm(len(negatives)).tolist()[:cfg.train_negatives]]
    return pos + neg, len(pos)


def group_loss(logits, sizes: list[int], leading: list[int]):
    """Cross-entropy of each group's logits against each of its positive slots, summed over them and divided by
    the number of groups (models/reranker.py:50-58); ``logits`` is every group's, in order."""
    import torch

    total, at = logits.new_zeros(()), 0
    for size, n_pos in zip(sizes, leading):
        scores = logits[at:at + size]
        log_probs = torch.log_softmax(scores.float(), dim=0)
        total = total - log_probs[:n_pos].sum()
        at += size
    return total / len(sizes)


def encode(tokenizer, question: str, texts: list[str], max_length: int):
    """The (question, passage) pairs as cq rerank's cross-encoder tokenizes them."""
    return tokenizer([question] * len(texts), texts, truncation=True, max_length=max_length, padding=True,
                     return_tensors="pt")


def recall_scores(model, tokenizer, dev: list[dict], cfg: RerankTrainConfig, device: str) -> dict:
    """recall@k of the reranked dev passages for k in :data:`RECALL_AT` and their mean (``recall``), over every dev
    record (one without an answer passage counts as a miss, as RerankData.evaluate counts it)."""
    import torch

    hits = {k: 0 for k in RECALL_AT}
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        for record in dev:
            found = list(record.get(PASSAGES) or [])[:cfg.dev_passages]
            aliases = [normalize_answer(a) for a in gold_aliases(record)]
            labels = [has_answer(aliases, p) for p in found]
            scores: list[float] = []
            for at in range(0, len(found), 64):
                enc = encode(tokenizer, str(record["question"]), [passage_text(p) for p in found[at:at + 64]],
                             cfg.max_length).to(device)
                scores += model(**enc).logits[:, 0].float().tolist()
            order = sorted(range(len(found)), key=lambda n: (-scores[n], n))
            for k in RECALL_AT:
                hits[k] += any(labels[n] for n in order[:k])
    model.train(was_training)
    out = {f"recall@{k}": hits[k] / len(dev) for k in RECALL_AT}
    out["recall"] = sum(out.values()) / len(RECALL_AT)
    return out


def _load(cfg: RerankTrainConfig, device: str, cache_root: str):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ..models.onnx_torch import local_dir
    from ..models.resolve import resolve

    resolved = resolve(cfg.model)
    path = local_dir(resolved, cache_root)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1).to(device)
    except (OSError, ValueError) as err:
        raise ResourceError(f"cannot load {cfg.model} as a cross-encoder: {str(err).splitlines()[0]}") from None
    return resolved, tokenizer, model


CPU_PAIRS_WARN = 64  # pairs in one forward pass above which a CPU run is told to split its batches


def cpu_batch_advice(cfg: RerankTrainConfig, device: str) -> str | None:
    """What to tell a CPU run whose forward pass holds more pairs than a 24 GB machine holds comfortably (16 x 16
    pairs at 160 tokens peaked at 23.7 GB RSS, 4 x 8 at 6.0 GB: docs/benchmarks/first-contact.md); None if fine."""
    group = cfg.train_positives + cfg.train_negatives
    pairs = cfg.batch_size * group
    if (device != "cpu" or cfg.grad_accum > 1 or cfg.accumulate != "mean" or pairs <= CPU_PAIRS_WARN
            or cfg.batch_size < 2):
        return None
    split = max((n for n in range(1, cfg.batch_size) if cfg.batch_size % n == 0 and n * group <= CPU_PAIRS_WARN),
                default=1)
    return (f"train rerank: {pairs} (question, passage) pairs in one forward pass on the CPU (16 x 16 peaked at "
            f"23.7 GB); --batch-size {split} --grad-accum {cfg.batch_size // split} averages the same "
            f"{cfg.batch_size} questions' losses into each step in less memory")


def train_rerank(cfg: RerankTrainConfig) -> dict:
    """Fine-tune the cross-encoder; returns the report written to ``cfg.out``/cq_train.json."""
    set_seed(cfg.seed)
    records = load_records(cfg.train, cfg.limit)
    train = rerank_examples(records, cfg)
    if not train:
        raise InputError(f"{cfg.train}: no record has a retrieved passage holding a gold answer; give records from "
                         "`cq convert ambignq` (or nq) with passages from `cq retrieve`")
    dev = load_records(cfg.dev, cfg.dev_limit) if cfg.dev else []
    if any(not r.get(PASSAGES) for r in dev):
        raise InputError(f"{cfg.dev}: every dev record needs passages (`cq retrieve --hits {cfg.dev_passages}`)")
    run = start(cfg)
    device = run.device
    if advice := cpu_batch_advice(cfg, device):
        log.warning(advice)
    resolved, tokenizer, model = _load(cfg, device, RunConfig.from_env().cache_root())

    def loss_of(net, idx: list[int]):
        drawn = [draw_group(train[i], cfg) for i in idx]
        pairs = [(train[i][0], text) for i, (texts, _) in zip(idx, drawn) for text in texts]
        enc = tokenizer([q for q, _ in pairs], [t for _, t in pairs], truncation=True, max_length=cfg.max_length,
                        padding=True, return_tensors="pt").to(device)
        return group_loss(net(**enc).logits[:, 0], [len(t) for t, _ in drawn], [n for _, n in drawn])

    per_step = cfg.grad_accum * run.accelerator.num_processes
    total = total_steps(len(train), cfg.batch_size, cfg.epochs, cfg.max_steps, per_step)
    keeper, timing = None, {}
    if dev:
        every = every_of(cfg.eval_every, len(train), cfg.batch_size * per_step)
        keeper = BestOnDev(model, lambda: recall_scores(model, tokenizer, dev, cfg, device), metric_key("recall"),
                           every, name=f"train {TASK}")
        timing = {"evaluate_at": eval_steps(every, total), "on_eval": keeper, "keep": (keeper,)}
    log.info("train rerank: %d of %d questions with a positive, %d steps at most, device %s", len(train),
             len(records), total, device)
    state = train_loop(run, model, len(train), loss_of, log_every=10, name=f"train {TASK}", **timing)
    if not run.is_main:
        return {}
    kept = keeper is not None and keeper.restore()
    os.makedirs(cfg.out, exist_ok=True)
    tokenizer.model_max_length = cfg.max_length  # the length cq rerank's cross-encoder reads pairs at
    model.save_pretrained(cfg.out)
    tokenizer.save_pretrained(cfg.out)
    report = {"task": TASK, "config": asdict(cfg), "base_model": resolved.describe(), "device": device,
              "processes": run.accelerator.num_processes, "steps": state.step, "stopped": state.stopped,
              "train_seconds": round(state.seconds(), 1), "peak_rss_mb": round(peak_rss_mb()),
              "train_records": len(records), "train_questions": len(train),
              "positives": sum(len(p) for _, p, _ in train), "negatives": sum(len(n) for _, _, n in train),
              "final_loss": state.mean_loss(10) if state.losses else None, **dev_report(keeper, "recall")}
    if dev:
        report["dev"] = keeper.best_scores() if kept else recall_scores(model, tokenizer, dev, cfg, device)
    write_report(cfg.out, report)
    return report
