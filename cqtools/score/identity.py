"""What made a score (issue 46, item 3). Every ``cq score`` summary carries ``"metric"``: the scorer's
name, its version and every choice that moves its numbers: the task's options (``--matcher``,
``--str-em``, ``--cq-parser``, the reader and BERTScore models...), the fixed recipe behind them (BLEU's
tokenizer, ROUGE's stemmer) and what the run actually used where that can differ from what was asked
(the BERTScore model and layer loaded or none, ASQA's sentence splitter, the Disambig-F1 reader's kind
and decoding). Two results files are comparable when their ``metric`` blocks are equal
(:func:`differences`); ``--paired`` refuses two sides whose blocks differ. docs/metrics.md lists the
variants in circulation and which one each paper's table used."""
from __future__ import annotations

import dataclasses

METRIC_VERSION = 1  # raise it when a task's numbers change for the same records and options

# Options that add output without changing any number of the summary (clam's --direct moves only the --curves,
# which get no paired difference).
NOT_IDENTITY = frozenset({"sweep", "curves", "direct"})

# The fixed recipe of each task (not an option): what a reader of a results file needs to know to compare.
RECIPES = {
    "cq": {"bleu": "corpus BLEU-4 over 13a tokens, shortest reference, no smoothing (evaluate's bleu; AskCQ)",
           "category_bleu": "corpus BLEU-1, same tokens"},
    "ambigqa": {"f1_bleu": "pycocoevalcap Bleu(4) per question, space tokens (AmbigQA's scorer)"},
    "asqa": {"rouge_l": "rouge_score rougeLsum, Porter stemmer, best of the annotators' long answers",
             "str_em_rule": "a short answer found in the normalised long answer (SQuAD normalisation)"},
}


def identity(task) -> dict:
    """The ``metric`` block of ``task``'s summary (after it scored: what it used is known then)."""
    options = task.options if dataclasses.is_dataclass(task.options) else None
    variant = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
               if f.name not in NOT_IDENTITY} if options is not None else {}
    variant.update(RECIPES.get(task.opts.task, {}))  # no recipe key is an option's name
    variant.update(_used(task))
    return {"name": f"cq.{task.opts.task}", "version": METRIC_VERSION, "variant": variant}


def _used(task) -> dict:
    """What the run used where it may differ from the options: a model that could not load, a fallback."""
    used = {}
    if hasattr(task, "bertscore"):
        scorer = task.bertscore
        used["bertscore_used"] = scorer.describe() if scorer is not None and getattr(scorer, "layers", None) else None
    if hasattr(task, "split_sentences"):
        name = getattr(task.split_sentences, "__qualname__", str(task.split_sentences))
        used["sentence_splitter"] = ("nltk.sent_tokenize (punkt)" if name == "sent_tokenize" else
                                     "NLTK Punkt, " + task.split_sentences.cq_splitter
                                     if hasattr(task.split_sentences, "cq_splitter")
                                     else "NLTK untrained Punkt (punkt data not installed)")
    if hasattr(task, "reader"):
        used["reader_used"] = _reader(task.reader)
    return used


def _reader(reader) -> dict | None:
    if reader is None or getattr(reader, "error", None) or getattr(reader, "kind", None) is None:
        return None
    out = {"model": reader.name, "kind": reader.kind}
    pipe = getattr(reader, "pipe", None)
    if all(hasattr(pipe, a) for a in ("max_length", "stride", "max_answer_tokens")):
        from .reader import N_BEST

        out["decoding"] = (f"run_qa.py post-processing: {N_BEST} best starts x {N_BEST} best ends, '' when the "
                           f"null score beats the best span; windows of {pipe.max_length} tokens, stride "
                           f"{pipe.stride}, spans of at most {pipe.max_answer_tokens} tokens")
    return out


def differences(a: dict | None, b: dict | None) -> list[str]:
    """How two ``metric`` blocks differ ("key: A vs B"), empty when the scores are comparable."""
    if a is None or b is None:
        return [] if a == b else [f"metric: {'missing' if a is None else 'present'} vs "
                                  f"{'missing' if b is None else 'present'} (a summary of an older cq?)"]
    out = [f"{key}: {a.get(key)!r} vs {b.get(key)!r}" for key in ("name", "version") if a.get(key) != b.get(key)]
    va, vb = a.get("variant") or {}, b.get("variant") or {}
    out += [f"{key}: {va.get(key)!r} vs {vb.get(key)!r}" for key in sorted(set(va) | set(vb))
            if va.get(key) != vb.get(key)]
    return out
