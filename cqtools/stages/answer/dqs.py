"""``--mode dqs`` (AmbigQA's DISAMBIG-FIRST, step 3): each of a record's ``dqs`` answered by retrieval QA, its
passages retrieved for the DQ's own text and reranked for it; the answers found go back into the DQ entries.
``stage`` is the package's :class:`cqtools.stages.answer.AnswerStage`."""
from __future__ import annotations

from ...errors import InputError
from ...metrics.normalize import normalize_answer
from .questions import Question, rerank_questions

DQS = "dqs"


def dqs_searcher(answer_config: "AnswerConfig", config):
    """The searcher ``--mode dqs`` retrieves with: ``cq retrieve``'s, over ``--index``."""
    from ...registry import SEARCHERS

    if not answer_config.index:
        raise InputError("--mode dqs retrieves passages for each DQ: give --index IDX (the `cq index` "
                         "directory, or a Pyserini prebuilt index, that cq retrieve reads)")
    return SEARCHERS.build(answer_config.retriever, config, index_dir=answer_config.index)


def dq_questions(records: list[dict], stage: "AnswerStage") -> list[Question]:
    """``--mode dqs``: one question per entry of each record's ``dqs``, its passages retrieved for
    the DQ's own text (not the record's question), then reranked for it."""
    c = stage.config
    questions: list[Question] = []
    for n, record in enumerate(records):
        dqs = record.get(DQS)
        if not isinstance(dqs, list) or not all(isinstance(d, dict) and d.get("question") for d in dqs):
            raise InputError(f"record {record.get('id')} has no 'dqs' with questions; run `cq disambiguate` first "
                             "(--mode dqs answers each DQ)", record_id=record.get("id"))
        questions += [Question(n, str(d["question"]), []) for d in dqs]
    if questions:
        ids = [str(i) for i in range(len(questions))]
        hits = stage.searcher.batch_search([q.text for q in questions], ids, c.hits, 1)
        for i, q in zip(ids, questions):
            q.passages = list(hits[i])
        rerank_questions(questions, stage.cross_encoder, c.rerank_depth, c.n_passages, c.batch_size)
    return questions


def distinct_answers(answers: list[dict]) -> list[dict]:
    """The first answer of each normalised text (several DQs may share an answer)."""
    seen: set[str] = set()
    out = []
    for answer in answers:
        key = normalize_answer(answer["text"])
        if key and key not in seen:
            seen.add(key)
            out.append(answer)
    return out


def fill_dqs(record: dict, questions: list[Question]) -> None:
    """Each DQ entry gets the answer read for it ("" when the reader found none)."""
    for dq, q in zip(record[DQS], questions):
        dq["answer"] = q.answers[0]["text"] if q.answers else ""
