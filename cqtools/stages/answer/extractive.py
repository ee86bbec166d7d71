"""The extractive reader (``cq answer --reader extractive --model DIR``): answer spans read off the
passages by a span model trained with ``cq train reader`` (:mod:`cqtools.train.span_reader`).

The model is an ``AutoModelForQuestionAnswering`` (an encoder with start/end logits per token) on
"question [SEP] title: text", one input per (question, passage). Passage relevance is the
SQuAD 2.0 "no answer" convention: training points passages without a gold answer at the [CLS]
token, so ``start[CLS] + end[CLS]`` is how strongly the model believes the passage holds no
answer. A span's score is ``start[i] + end[j] - (start[CLS] + end[CLS])``: comparable across
passages (a span in a passage the model finds irrelevant scores low) and positive when the span
is more likely than "no answer here".

Decoding, per question: the ``top_k`` starts x ``top_k`` ends of each of the top ``n_passages``
passages (``i <= j``, at most ``max_answer_tokens`` tokens, inside the passage), then in the order
``order`` names: ``rank`` (the default) takes each passage's best span in the order the passages
come (the reranker's: the passage ranked first gives the first answer, as DPR's reader answers from
the passage it selects), then every other span by score; ``score`` takes every span by score alone
(ties by passage rank, start), so a span of a lower passage that looks more answer-like wins.
``select`` (a reader trained with ``cq train reader --selection-head``) orders the passages by the
reader's own passage-selection score instead (DPR's selection head: a linear score of each passage's
[CLS] state, trained so the passage holding the answer outscores the question's others): the passage it
selects gives the first answer, its spans marked ``selected``. Distinct normalised texts. Single: the first span. Multi: the first span, then every distinct span
scoring at least ``multi_threshold``, ``max_answers`` at most.

Why ``rank``: the span model is small and reads each passage alone, while the cross-encoder ranked
the passages for the question; on the first 150 covered AmbigNQ dev questions (BM25 20, reranked
top 5) it raised the reader's F1_ans (float32) from 16.0 to 18.3 (``--mode multi``) and its CBQA F1
on gold-DQ CQs from 30.8 to 37.0 (``--mode cq``): docs/benchmarks/reader-decoding.md (chosen on
those same questions; read its caveats).

A span made only of the question's own words (SQuAD-normalised: "Georgia" for "What is the capital of
Georgia?") is never an answer: ``skip_question_spans`` drops it before decoding, so the next span
of that passage competes instead. An option's reading (``cq answer --mode cq``) is held to the words of
the question asked, not of the option it adds ("Grace (Jeff Buckley album)": Jeff Buckley is an answer).

``type_prior`` (``--type-prior W``; 0, the default: off) takes ``W`` off the score of each span not of the
kind the question asks for (who: a name, when: a date, how many: a number, ...) before ordering and the
multi threshold: :mod:`.anstype`.

Each (question, passage) pair runs alone at its own length, so answers never depend on
``--batch-size`` (``CQ_PADDED_BATCHES=1`` pads batches instead: faster, batch-dependent).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ...errors import ResourceError
from ...records import distinct_texts, passage_text
from .anstype import apply_prior, prior
from .options import READER_PASSAGES, ExtractiveReaderOptions


@dataclass
class ExtractiveOptions:
    """How the extractive reader reads (``max_length`` comes from the model's cq_train.json)."""

    n_passages: int | None = READER_PASSAGES  # top passages read per question (--passages; None: every one given)
    max_length: int = 256        # tokens per (question, passage) input
    max_answer_tokens: int = 10  # longest span, in tokens
    top_k: int = 20              # start and end candidates per passage
    multi_threshold: float = 0.0  # multi: spans scoring below this (vs "no answer") are dropped
    max_answers: int = 5         # multi: at most this many answers
    max_passage_tokens: int | None = None  # evidence budget (--max-passage-tokens; 0: the model's input length)
    skip_question_spans: bool = ExtractiveReaderOptions.question_spans == "skip"  # drop spans of the question's words alone
    order: str = ExtractiveReaderOptions.span_order  # rank: each passage's best span in passage order first; score: by score alone
    type_prior: float = ExtractiveReaderOptions.type_prior  # score off spans not of the question's answer type (anstype.py)

    def params(self) -> dict:
        out = asdict(self)
        out["passages"] = out.pop("n_passages")
        if out["max_passage_tokens"] is None:
            del out["max_passage_tokens"]
        return out


TITLE_JOINT = ": "  # between a passage's title and its text in what the reader reads


def inside_word(context: str, begin: int, end: int) -> bool:
    """Whether ``context[begin:end]`` starts or ends inside a word (letters or digits run on across the edge)."""
    return (0 < begin < len(context) and context[begin - 1].isalnum() and context[begin].isalnum()) or \
        (0 < end < len(context) and context[end - 1].isalnum() and context[end].isalnum())


def context_of(passage: dict) -> str:
    """What the reader reads of a passage, and what span offsets index: "title: text"."""
    return passage_text({"title": passage.get("title"), "text": passage.get("text") or ""}, sep=TITLE_JOINT)


def trained_settings(path: str) -> dict:
    """The reader settings a ``cq train reader`` directory was trained with (its cq_train.json)."""
    from ...models.roles import trained_config

    config = trained_config(path)
    return {k: config[k] for k in ("max_length", "max_answer_tokens") if config.get(k)}


class ExtractiveReader:
    """Reads answer spans with a question-answering model (see the module's doc). ``tokenizer`` must
    be a fast tokenizer (character offsets); the model is put in eval mode by the caller."""

    name = "extractive"

    def __init__(self, tokenizer, model, info: dict, options: ExtractiveOptions | None = None,
                 batch_size: int | None = None, config=None, head=None):
        """``config``: the run configuration it was built under (its batching and input cap; None: cq's
        defaults, each input alone and no cap); ``head``: the passage-selection head (:func:`load_head`)."""
        from ...config import RunConfig

        config = config if config is not None else RunConfig()
        if not tokenizer.is_fast:
            raise ResourceError(f"extractive reader {info.get('model')}: needs a fast tokenizer (span offsets)")
        self.tokenizer, self.model = tokenizer, model
        self.options = options if options is not None else ExtractiveOptions()
        if self.options.order == "select" and head is None:
            raise ResourceError(f"extractive reader {info.get('model')}: --span-order select reads by a passage-"
                                "selection head, and this model has none; train one with `cq train reader "
                                "--selection-head`, or use --span-order rank")
        self.head = head
        self.batch_size = batch_size or 32
        self.padded = config.padded_batches
        self.input_cap = config.max_input_tokens  # --max-input-tokens of the configuration that built it
        self._info = {**info, "batching": "padded" if self.padded else "per-item"}

    @property
    def info(self) -> dict:
        return dict(self._info)

    @property
    def params(self) -> dict:
        return self.options.params()

    def evidence(self, question: str, passages: list[dict], multi: bool = False) -> list[dict]:
        """The passages read for ``question``: the top ``n_passages``, or with ``max_passage_tokens``
        as many as fit that budget in order, "title: text" counted with the model's tokenizer and the
        question counting toward it. 0 is the model's input length, and this reader reads each passage in
        an input of its own (as DPR's reader does), so it holds every passage: none is dropped (a budget summed
        over passages read apart read 5-11 of a DQ's 100)."""
        from ..evidence import fit, token_counter

        o = self.options
        if o.max_passage_tokens is None or o.max_passage_tokens == 0:
            return list(passages[:o.n_passages])
        count = token_counter(self)
        return fit(passages, o.max_passage_tokens, count, count(question), render=context_of, limit=o.n_passages)

    # -- scoring -------------------------------------------------------------------------------

    def _logits(self, question: str, contexts: list[str]) -> list[tuple]:
        """(start logits, end logits, offsets, context token range, selection score or None) per context."""
        import torch

        from ...models.cutting import input_limit

        limit = input_limit(self.options.max_length, cap=self.input_cap)
        question = self._fitted_question(question.strip(), limit)
        device = next(self.model.parameters()).device
        step = self.batch_size if self.padded else 1
        out = []
        for begin in range(0, len(contexts), step):
            chunk = contexts[begin:begin + step]
            enc = self.tokenizer([question] * len(chunk), chunk, truncation="only_second",
                                 max_length=limit, return_offsets_mapping=True, padding=True, return_tensors="pt")
            offsets = enc.pop("offset_mapping").tolist()
            feed = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
            with torch.inference_mode():
                logits = self.model(**feed, output_hidden_states=self.head is not None)
                selection = (self.head(logits.hidden_states[-1][:, 0]).squeeze(-1).float().cpu().tolist()
                             if self.head is not None else [None] * len(chunk))
            starts, ends = logits.start_logits.float().cpu(), logits.end_logits.float().cpu()
            for row in range(len(chunk)):
                in_context = [i for i, s in enumerate(enc.sequence_ids(row)) if s == 1]
                out.append((starts[row], ends[row], offsets[row], in_context, selection[row]))
        return out

    def _fitted_question(self, question: str, limit: int) -> str:
        """The question, cut to its first half of ``limit`` tokens when longer (with a warning): the passage
        needs the rest, and a question over the whole input made the tokenizer raise. A question this long
        (hundreds of words) is a pasted document; a shorter one is never touched."""
        keep = limit // 2
        offsets = self.tokenizer(question, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        if len(offsets) <= keep:
            return question
        import logging

        logging.getLogger(__name__).warning("the reader reads the question's first %d of its %d tokens (its input "
                                            "holds %d)", keep, len(offsets), limit)
        return question[:offsets[keep - 1][1]]

    def spans(self, question: str, passages: list[dict], asked: str | None = None) -> list[dict]:
        """Every candidate span of the top passages, best first: ``{text, score, passage_id,
        passage_rank, start, end, grounding}`` (``start``/``end``: characters of "title: text").
        ``asked``: the question whose words alone are no answer (default ``question``; an option's reading
        passes the question the user asked, so "Leonard Cohen" stays an answer for the option "Hallelujah
        (Leonard Cohen song)")."""
        from ...metrics.normalize import normalize_answer

        o = self.options
        shown = passages[:o.n_passages]
        contexts = [context_of(p) for p in shown]
        asked = set(normalize_answer(asked or question).split()) if o.skip_question_spans else None
        found = []
        for rank, (passage, context, read) in enumerate(zip(shown, contexts, self._logits(question, contexts))):
            (s, e, offsets, idx), chosen = read[:4], (read[4] if len(read) > 4 else None)
            if not idx:
                continue
            null = float(s[0] + e[0])
            extra = {} if chosen is None else {"selection_score": round(chosen, 4)}
            # "title: text": a span lies in the title or in the text, never across the joint between them
            title_end = len(passage["title"]) if passage.get("title") else -1
            first, last = idx[0], idx[-1]
            k = min(o.top_k, last - first + 1)
            top_s = (s[first:last + 1].topk(k).indices + first).tolist()
            top_e = (e[first:last + 1].topk(k).indices + first).tolist()
            for i in top_s:
                for j in top_e:
                    if j < i or j - i + 1 > o.max_answer_tokens:
                        continue
                    begin, end = offsets[i][0], offsets[j][1]
                    if begin < title_end + len(TITLE_JOINT) and end > title_end >= 0:
                        continue
                    if inside_word(context, begin, end):
                        continue  # a piece of a word ("jah" of "Hallelujah"): a subword token's offsets
                    text = context[begin:end]
                    stripped = text.strip()
                    if not stripped or (asked is not None and set(normalize_answer(stripped).split()) <= asked):
                        continue
                    begin += len(text) - len(text.lstrip())
                    found.append({"text": stripped, "score": round(float(s[i] + e[j]) - null, 4),
                                  "passage_id": passage.get("id"), "passage_rank": rank, "start": begin,
                                  "end": begin + len(stripped), "grounding": "span", **extra})
        found.sort(key=lambda a: (-a["score"], a["passage_rank"], a["start"], a["end"]))
        return found

    def read(self, questions: list[str], passages: list[list[dict]], multi: bool = False,
             asked: list[str] | None = None) -> list[list[dict]]:
        """Per question, answer spans best first: the best one, or (``multi``) every distinct span
        above ``multi_threshold`` (at least the best, at most ``max_answers``). ``asked``: per question, the
        question whose words alone are no answer (:meth:`spans`)."""
        o = self.options
        out = []
        for n, (question, ps) in enumerate(zip(questions, passages)):
            found = self.spans(question, ps or [], asked=asked[n]) if asked else self.spans(question, ps or [])
            candidates = apply_prior(found, question, o.type_prior)
            score = prior(question, o.type_prior)
            if o.order == "rank":
                candidates = passage_order(candidates)
            elif o.order == "select":
                candidates = selected_order(candidates)
            keep = set(distinct_texts(a["text"] for a in candidates))
            answers, seen = [], set()
            for a in candidates:
                if a["text"] in keep and a["text"] not in seen:
                    seen.add(a["text"])
                    answers.append(a)
            if multi:
                answers = answers[:1] + [a for a in answers[1:o.max_answers] if score(a) >= o.multi_threshold]
            else:
                answers = answers[:1]
            out.append(answers)
        return out


def passage_order(spans: list[dict]) -> list[dict]:
    """``spans`` (best first) reordered: each passage's best span in passage-rank order, then the rest
    as they were."""
    firsts: dict[int, dict] = {}
    for span in spans:
        firsts.setdefault(span["passage_rank"], span)
    chosen = {id(span) for span in firsts.values()}
    return [firsts[rank] for rank in sorted(firsts)] + [span for span in spans if id(span) not in chosen]


def selected_order(spans: list[dict]) -> list[dict]:
    """``spans`` (best first) in the selection head's passage order: each passage's best span, passages by
    selection score (ties: rank), then the rest as they were; the selected passage's spans marked
    ``selected``."""
    if not spans:
        return spans
    top = min(spans, key=lambda a: (-a["selection_score"], a["passage_rank"]))["passage_rank"]
    spans = [{**a, "selected": True} if a["passage_rank"] == top else a for a in spans]
    by_selection = sorted(spans, key=lambda a: (-a["selection_score"], a["passage_rank"], -a["score"]))
    firsts: dict[int, dict] = {}
    for span in by_selection:
        firsts.setdefault(span["passage_rank"], span)
    chosen = {id(span) for span in firsts.values()}
    return list(firsts.values()) + [span for span in spans if id(span) not in chosen]


HEAD_FILE = "selection_head.json"  # the passage-selection head beside a reader's weights (cq train reader)


def attach_head(model, device) -> None:
    """A fresh passage-selection head on ``model`` (``model.cq_selection``: [CLS] state -> one score), trained
    with it."""
    import torch

    model.cq_selection = torch.nn.Linear(model.config.hidden_size, 1).to(device)


def save_head(model, out: str) -> None:
    """Write ``model.cq_selection`` to ``out``/selection_head.json and take it off the model (its weights file
    stays the plain span model every loader reads)."""
    import json
    import os

    head = model.cq_selection
    del model.cq_selection
    with open(os.path.join(out, HEAD_FILE), "w") as fh:
        json.dump({"weight": [float(x) for x in head.weight.detach().cpu().reshape(-1)],
                   "bias": float(head.bias.detach().cpu()[0])}, fh)
        fh.write("\n")


def load_head(path: str, device: str = "cpu"):
    """The selection head saved in the model directory ``path`` (a torch Linear), or None without one."""
    import json
    import os

    file = os.path.join(path, HEAD_FILE)
    if not os.path.isfile(file):
        return None
    import torch

    with open(file) as fh:
        saved = json.load(fh)
    head = torch.nn.Linear(len(saved["weight"]), 1)
    with torch.no_grad():
        head.weight.copy_(torch.tensor(saved["weight"]).reshape(1, -1))
        head.bias.fill_(saved["bias"])
    return head.to(device).eval()


def load_extractive(model: str, config, batch_size: int | None = None, **options) -> ExtractiveReader:
    """The extractive reader of ``model`` (a ``cq train reader`` directory, or any hub id / local
    directory of an ``AutoModelForQuestionAnswering``) on ``config``'s device, loaded once per process."""
    from ...models.load import load_transformers, pick_device
    from ...models.roles import architectures, is_span_model
    from ...models.resolve import resolve

    resolved = resolve(model, config=config)
    hint = "train one with `cq train reader` and pass --model DIR"
    if resolved.fmt in ("gguf", "onnx"):
        raise ResourceError(f"--reader extractive needs a span (question-answering) model, and {model} is "
                            f"a {resolved.fmt} model; {hint}")
    if not is_span_model(resolved.path):
        raise ResourceError(f"--reader extractive needs a span (question-answering) model; {model} is "
                            f"{', '.join(architectures(resolved.path)) or 'not one'}; {hint}")
    dev = pick_device(config.device)
    tokenizer, qa_model = load_transformers(resolved.path, "AutoModelForQuestionAnswering", dev,
                                            "an extractive reader", hint, config)
    names = {f for f in ExtractiveOptions.__dataclass_fields__}
    settings = {**trained_settings(resolved.path), **{k: v for k, v in options.items() if k in names and v is not None}}
    if settings.get("max_passage_tokens") is not None and options.get("n_passages") is None:
        settings["n_passages"] = None  # an evidence budget and no --passages: every passage that fits
    info = {"model": resolved.name, "source": resolved.source, "device": dev, "dtype": "float32"}
    return ExtractiveReader(tokenizer, qa_model, info, ExtractiveOptions(**settings), batch_size, config,
                            head=load_head(resolved.path, dev))


def extractive_reader(options, config, batch_size: int | None = None) -> ExtractiveReader:
    """The extractive reader of ``options.model`` (:class:`.options.ExtractiveReaderOptions`)."""
    return load_extractive(options.model, config, batch_size, n_passages=options.n_passages,
                           max_passage_tokens=options.max_passage_tokens, order=options.span_order,
                           skip_question_spans=options.question_spans == "skip", type_prior=options.type_prior)
