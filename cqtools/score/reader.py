"""The reader of the ``asqa`` task's Disambig-F1 and DR: it answers each gold disambiguated
question from the predicted long answer. An extractive QA model (:class:`ExtractiveReader`), or a
generator through `cq answer`'s span-grounded reader; torch and transformers are imported on
first use."""
from __future__ import annotations

import logging

from ..errors import ResourceError

log = logging.getLogger("cqtools")


N_BEST = 20  # run_qa.py's --n_best_size (its default): start and end candidates per window


def answer_or_null(best: tuple[float, str] | None, null: float | None) -> str:
    """SQuAD 2.0's no-answer option as run_qa.py applies it (null_score_diff_threshold 0): "" when the lowest
    null score of the question's windows (start and end on <s>) beats its best span, else that span's text."""
    if best is None:
        return ""
    return "" if null is not None and null > best[0] else best[1]


class ExtractiveReader:
    """Extractive QA with ``AutoModelForQuestionAnswering`` (transformers 5 has no
    "question-answering" pipeline): the best-scoring span (start + end logit, start <= end, at most
    ``max_answer_tokens`` tokens, inside the context) over windows of ``max_length`` tokens with
    ``stride`` overlap, as that pipeline did by default (no "no answer" option)."""

    def __init__(self, path: str, device: str, batch_size: int, max_length: int = 384, stride: int = 128,
                 max_answer_tokens: int = 30, config=None):
        import torch

        from ..models.load import load_transformers, pick_device

        self.torch = torch
        self.device = pick_device(device)
        self.tokenizer, self.model = load_transformers(path, "AutoModelForQuestionAnswering", self.device,
                                                       "an extractive QA reader", config=config)
        if not self.tokenizer.is_fast:
            raise ResourceError(f"reader {path}: needs a fast tokenizer (character offsets of the spans)")
        self.batch_size, self.max_length, self.stride = batch_size, max_length, stride
        self.max_answer_tokens = max_answer_tokens

    def __call__(self, questions: list[str], contexts: list[str]) -> list[str]:
        out = []
        for start in range(0, len(questions), self.batch_size):
            out += self._batch(questions[start:start + self.batch_size], contexts[start:start + self.batch_size])
        return out

    def _batch(self, questions: list[str], contexts: list[str]) -> list[str]:
        enc = self.tokenizer([q.lstrip() for q in questions], contexts, truncation="only_second",
                             max_length=self.max_length, stride=self.stride, return_overflowing_tokens=True,
                             return_offsets_mapping=True, padding=True, return_tensors="pt")
        owners = enc.pop("overflow_to_sample_mapping").tolist()
        offsets = enc.pop("offset_mapping").tolist()
        inputs = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        with self.torch.no_grad():
            logits = self.model(**inputs)
        starts, ends = logits.start_logits.float().cpu(), logits.end_logits.float().cpu()
        best: dict[int, tuple[float, str]] = {}
        null: dict[int, float] = {}
        for w, owner in enumerate(owners):
            context_idx = [i for i, seq in enumerate(enc.sequence_ids(w)) if seq == 1]
            if not context_idx:
                continue
            s_logits, e_logits = starts[w], ends[w]
            null[owner] = min(null.get(owner, float("inf")), float(s_logits[0] + e_logits[0]))
            span = self._best_span(s_logits, e_logits, context_idx[0], context_idx[-1])
            if span is not None and (owner not in best or span[0] > best[owner][0]):
                score, i, j = span
                best[owner] = (score, contexts[owner][offsets[w][i][0]:offsets[w][j][1]].strip())
        return [answer_or_null(best.get(i), null.get(i)) for i in range(len(questions))]

    def _best_span(self, s_logits, e_logits, first: int, last: int):
        """(score, start, end) of the best span inside the context as the released run_qa.py's post-processing
        picks it: among the N_BEST highest start and end logits of the window, end >= start, at most
        ``max_answer_tokens`` tokens; None when no pair qualifies."""
        top_s = set(self.torch.argsort(s_logits, descending=True)[:N_BEST].tolist())
        top_e = set(self.torch.argsort(e_logits, descending=True)[:N_BEST].tolist())
        pairs = [(float(s_logits[i] + e_logits[j]), i, j) for i in sorted(top_s) for j in sorted(top_e)
                 if first <= i <= j <= last and j - i + 1 <= self.max_answer_tokens]
        return max(pairs, key=lambda p: (p[0], -p[1], -p[2])) if pairs else None


class DisambigF1Reader:
    """The scorer's reader for Disambig-F1 (not ``cq answer``'s readers): an extractive model (:class:`ExtractiveReader`), or else a
    generative one through `cq answer`'s own reader (span-grounded, with the
    long answer as its only passage; ``kind`` says which). A model that cannot be resolved or
    loaded leaves ``error`` set and Disambig-F1/DR null (never a silent 0).
    """

    def __init__(self, name: str, device: str, batch_size: int, config=None):
        """``config``: the run configuration the reader loads under (None: the process's)."""
        self.name, self.device, self.batch_size, self.config = name, device, batch_size, config
        self.pipe = None
        self.generative = None
        self.kind: str | None = None
        self.error: str | None = None

    def _load(self) -> None:
        from ..models import resolve

        try:
            resolved = resolve(self.name, config=self.config)
        except ResourceError as err:
            self.error = f"reader {self.name} unavailable: {err.message}"
            return
        from transformers import AutoConfig

        architectures = [] if resolved.fmt == "gguf" else (
            getattr(AutoConfig.from_pretrained(resolved.path), "architectures", None) or [])
        if not any(a.endswith("ForQuestionAnswering") for a in architectures):
            generative = resolved.fmt == "gguf" or any(a.endswith(("ForCausalLM", "ForConditionalGeneration"))
                                                       for a in architectures)
            if not generative:
                self.error = (f"reader {self.name} is neither an extractive QA model nor a generator "
                              f"({', '.join(architectures) or 'no architecture'}); pass e.g. "
                              f"deepset/roberta-large-squad2")
                return
            from ..models.load import load_generator
            from ..stages.answer import GenerativeReader, ReaderOptions

            options = ReaderOptions(n_passages=1, passage_chars=4000)
            self.generative = GenerativeReader(load_generator(self.name, self.device, config=self.config), options)
            self.kind = "generative (cq answer reader, span-grounded)"
            return
        self.kind = "extractive"
        try:
            self.pipe = ExtractiveReader(resolved.path, self.device, self.batch_size, config=self.config)
        except ResourceError as err:
            self.error = err.message
            return
        log.info("reader: %s", resolved.describe())

    def answer(self, questions: list[str], contexts: list[str]) -> list[str] | None:
        if self.pipe is None and self.generative is None and self.error is None:
            self._load()
            if self.error:
                log.warning("%s", self.error)
        if self.error:
            return None
        answers = [""] * len(questions)
        todo = [i for i, c in enumerate(contexts) if c.strip()]
        if todo and self.generative is not None:
            passages = [[{"id": "long_answer", "title": "", "text": contexts[i], "score": 0.0, "rank": 1}]
                        for i in todo]
            for i, found in zip(todo, self.generative.read([questions[i] for i in todo], passages)):
                answers[i] = found[0]["text"] if found else ""
            return answers
        if todo:
            for i, answer in zip(todo, self.pipe([questions[i] for i in todo], [contexts[i] for i in todo])):
                answers[i] = answer
        return answers


