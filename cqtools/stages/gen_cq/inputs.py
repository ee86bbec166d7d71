"""What a CQ model reads of a record: its passages and answers laid out as the input text (cq's layout or
AskCQ's), the one function ``cq gen-cq --method seq2seq`` generates from and ``cq train gen-cq`` trains on."""
from __future__ import annotations

from ...errors import InputError
from ...records import GOLD, answer_texts as predicted_answer_texts
from ...records import passage_snippets as record_snippets
from .. import evidence

SEP = " [SEP] "
PASSAGE_WORDS = 60  # each passage's text is cut to this many words in prompts and seq2seq inputs (no option)
LAYOUTS = ("cq", "askcq")  # seq2seq input: "AQ [SEP] answers [SEP] passages", or AskCQ's (CQDataset.py)


# --- passages and answers as model input -------------------------------------------------------

def passage_snippets(record: dict, n: int, words: int = PASSAGE_WORDS) -> list[str]:
    """Top ``n`` passages as "title: text" cut to ``words`` words (:func:`cqtools.records.passage_snippets`)."""
    return record_snippets(record, n, words)


def answer_texts(record: dict, source: str | None) -> list[str] | None:
    """Answers for the input: ``pred`` = the record's ``answers`` (cq answer), ``gold`` = gold.answers
    (the paper's ground-truth-answers upper bound; read only when asked for explicitly)."""
    if source is None:
        return None
    if source == "gold":
        clusters = (record.get(GOLD) or {}).get("answers")
        if clusters is None:
            raise InputError(f"record {record.get('id')} has no gold.answers; --with-answers gold needs gold "
                             "from cq convert")
        return [c[0] if isinstance(c, list) else str(c) for c in clusters if c]
    return predicted_answer_texts(record, "run cq answer --mode multi first, or drop --with-answers", raw=True)


def seq2seq_input(question: str, snippets: list[str], answers: list[str] | None = None) -> str:
    """"AQ [SEP] passages" or "AQ [SEP] answers [SEP] passages" (cq's layout of the AskCQ inputs)."""
    parts = [question.strip()]
    if answers is not None:
        parts.append(" | ".join(answers))
    parts.append(" ".join(snippets))
    return SEP.join(parts)


def special_tokens(generator) -> tuple[str, str, str]:
    """(sep, bos, eos) of the generator's tokenizer, as AskCQ's input layout writes them (BART: "</s>",
    "<s>", "</s>"); a tokenizer without them cannot take that layout."""
    tok = getattr(generator, "tokenizer", None)
    found = tuple(getattr(tok, name, None) for name in ("sep_token", "bos_token", "eos_token"))
    if not all(found):
        raise InputError(f"input layout askcq needs a tokenizer with sep, bos and eos tokens (BART's); "
                         f"{getattr(generator, 'name', 'the model')} has {found}: use --input-layout cq")
    return found


def askcq_input(question: str, snippets: list[str], answers: list[str] | None, tokens: tuple[str, str, str]) -> str:
    """AskCQ's CQ-generation input (CQDataset.py ``CQGDataset.process_data``) as text: the question and
    each answer followed by the separator, then each passage encoded on its own ("<s>passage</s>"); the
    tokenizer adds the first "<s>" and the last "</s>" itself (BART: "<s>AQ</s>A1</s>A2</s></s><s>P1</s><s>P2</s>")."""
    sep, bos, eos = tokens
    head = question + sep + "".join(a.strip() + sep for a in answers or [])
    return head + "".join(eos + bos + s for s in snippets)


def model_input(record: dict, build_input, n_passages: int, max_tokens: int | None, count,
                with_answers: str | None, cut: bool = False) -> tuple[str, list[str], list[str] | None]:
    """(input, passages read, answers) of ``record`` for a fine-tuned generator: what ``cq gen-cq --method seq2seq``
    generates from and ``cq train gen-cq`` trains on, one function for both (the passages as :func:`read_passages`
    chooses them, the text as ``build_input`` (:func:`input_builder`) lays it out)."""
    answers = answer_texts(record, with_answers)
    snippets = read_passages(record, n_passages, max_tokens, count, [record["question"], *(answers or [])], cut)
    return build_input(record["question"], snippets, answers), snippets, answers


def record_passages(record: dict) -> list[dict]:
    passages = record.get("passages") or []
    if not isinstance(passages, list) or not all(isinstance(p, dict) for p in passages):
        raise InputError(f"record {record.get('id')}: 'passages' must be a list of {{title, text}} objects "
                         "(from cq retrieve)")
    return passages


def read_passages(record: dict, n_passages: int, max_tokens: int | None, count, taken: list[str],
                  cut: bool = False) -> list[str]:
    """What the model reads of the record's passages: the top ``n_passages`` cut to :data:`PASSAGE_WORDS`
    words each (``max_tokens`` None, as always), or whole passages in order while the question and the
    answers (``taken``) and they fit ``max_tokens`` tokens (at most ``n_passages``; :func:`evidence.fit`),
    their number noted in ``meta.passages_read.gen-cq``; ``cut``: the first that does not fit is read too, cut
    where the budget is full (AskCQ's input is cut at its 1,024th token, CQDataset.py:126)."""
    if max_tokens is None:
        return passage_snippets(record, n_passages)
    # the input's special tokens count too: a separator after the question and each answer, <s> and </s>
    # around the whole input and around each passage (AskCQ's layout; cq's uses no more)
    used = sum(count(t) for t in taken) + len(taken) + 2
    chosen = evidence.fit(record_passages(record), max_tokens, lambda text: count(text) + 2, used=used,
                          limit=n_passages, cut=cut) \
        if n_passages else []
    evidence.note_read(record, "gen-cq", len(chosen))
    return [evidence.passage_text(p) for p in chosen]
