"""Few-shot examples for ``cq disambiguate --method rac``, chosen per question by nearest-neighbour
similarity of questions (Tree of Clarifications picks its k shots the same way).

A shot is ``(question, [(disambiguated question, answer), ...])``. ``--shots FILE`` reads JSONL
records that carry disambiguations: gold ones (``gold.dqs: [{question, answers}]``, e.g.
``cq convert ambignq train_light.json``) or predicted ones (``dqs: [{question, answer}]``);
records with fewer than two disambiguations are not examples of ambiguity and are left out.
Without a file the built-in examples of :mod:`.prompts_disamb` are used.

Similarity is the dot product of normalised sentence embeddings (our bi-encoder through
:func:`cqtools.models.load_encoder`), computed with numpy; ties go to the earlier shot.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import InputError, ResourceError
from ..jsonl import load_json_or_jsonl
from ..models.roles import role
from . import prompts_disamb

DEFAULT_ENCODER = role("encoder").default


class Shot(tuple):
    """``(question, [(DQ, answer), ...])``, unpacked as such, carrying the record's first gold long
    answer (``long_answer``, None when it has none; ``--method toc`` shows it) and its ``id``."""

    def __new__(cls, question: str, pairs: list[tuple[str, str]], long_answer: str | None = None,
                id: str | None = None):
        shot = super().__new__(cls, (question, pairs))
        shot.long_answer, shot.id = long_answer, id
        return shot


def builtin_shots() -> list[Shot]:
    return [Shot(q, list(pairs)) for q, pairs in prompts_disamb.DISAMBIG_EXAMPLES]


def _long_answer(record: dict, gold: dict) -> str | None:
    longs = gold.get("long_answers") or []
    return str(longs[0]) if longs and longs[0] else None


def shot_from_record(record: dict, max_pairs: int | None = 4, min_pairs: int = 2) -> Shot | None:
    """A shot from a record's gold or predicted disambiguations (None when it has fewer than
    ``min_pairs``), with at most ``max_pairs`` of them (None: all) and its first gold long answer."""
    question = record.get("question")
    pairs: list[tuple[str, str]] = []
    gold = record.get("gold") if isinstance(record.get("gold"), dict) else {}
    for dq in gold.get("dqs") or []:
        answers = dq.get("answers") or []
        if dq.get("question") and answers:
            pairs.append((str(dq["question"]), str(answers[0])))
    if not pairs:
        for dq in record.get("dqs") or []:
            if isinstance(dq, dict) and dq.get("question") and dq.get("answer"):
                pairs.append((str(dq["question"]), str(dq["answer"])))
    if not question or len(pairs) < max(min_pairs, 1):
        return None
    rid = record.get("id")
    return Shot(str(question), pairs[:max_pairs], _long_answer(record, gold), None if rid is None else str(rid))


def load_shots(path: str, max_pairs: int | None = 4, min_pairs: int = 2, need_long: bool = False) -> list[Shot]:
    """Shots from a JSON/JSONL file of records (see the module docstring); ``need_long`` keeps only
    records with a gold long answer (``gold.long_answers``, e.g. ``cq convert asqa``)."""
    try:
        shots = [s for r in load_json_or_jsonl(path) if isinstance(r, dict)
                 and (s := shot_from_record(r, max_pairs, min_pairs)) is not None
                 and (s.long_answer or not need_long)]
    except FileNotFoundError:
        raise ResourceError(f"--shots {path}: no such file") from None
    if not shots and need_long:
        raise InputError(f"--shots {path} has no record with disambiguations (gold.dqs) and a long answer "
                         "(gold.long_answers); pass ASQA records from `cq convert asqa`")
    if not shots:
        raise InputError(f"--shots {path} has no record with two or more disambiguations (gold.dqs or dqs); "
                         "pass records from `cq convert ambignq` (e.g. train_light.json)")
    return shots


class ShotSelector:
    """``select(questions, k)``: the k shots whose questions are most similar to each question.

    With no more shots than ``k`` every shot is used as is and no encoder is loaded."""

    def __init__(self, shots: Sequence[Shot], encoder=None, encoder_name: str = DEFAULT_ENCODER,
                 device: str = "auto", batch_size: int = 64, metric: str = "cosine", config=None):
        """``config``: the run configuration the encoder loads under (None: one from the environment)."""
        if metric not in ("cosine", "l2"):
            raise ValueError(f"metric must be cosine or l2, not {metric!r}")
        self.metric = metric  # l2: Euclidean distance of raw (unnormalised) vectors, as dsp's Faiss index
        self.shots = list(shots)
        self._encoder = encoder
        self.encoder_name = encoder_name
        self.device = device
        self.config = config
        self.batch_size = batch_size
        self._matrix = None

    @property
    def encoder(self):
        if self._encoder is None:
            from ..models.load import load_encoder

            self._encoder = load_encoder(self.encoder_name, self.device, self.config)
        return self._encoder

    def _embed(self, texts: list[str]):
        import numpy as np

        vectors = self.encoder.encode(texts, batch_size=self.batch_size, normalize_embeddings=self.metric == "cosine",
                                      convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def nearest(self, questions: list[str], k: int, allowed: list[Sequence[int]]) -> list[list[int]]:
        """For each question, the indices of its ``k`` nearest shots among ``allowed`` (its own pool),
        nearest LAST; ties to the earlier shot. Always ranks, even a pool of ``k`` or fewer."""
        import numpy as np

        if self._matrix is None:
            self._matrix = self._embed([q for q, _ in self.shots])
        queries = self._embed(list(questions)) if questions else np.zeros((0, 1), dtype=np.float32)
        out = []
        for query, pool in zip(queries, allowed):
            pool = np.asarray(list(pool), dtype=np.int64)
            if k <= 0 or not len(pool):
                out.append([])
                continue
            rows = self._matrix[pool]
            if self.metric == "l2":
                key = ((rows.astype(np.float64) - query.astype(np.float64)) ** 2).sum(axis=1)
            else:
                key = -(rows @ query)
            order = np.lexsort((pool, key))[:k]
            out.append([int(pool[i]) for i in reversed(order.tolist())])
        return out

    def select(self, questions: list[str], k: int) -> list[list[Shot]]:
        if k <= 0:
            return [[] for _ in questions]
        if len(self.shots) <= k:
            return [list(self.shots) for _ in questions]
        import numpy as np

        if self._matrix is None:
            self._matrix = self._embed([q for q, _ in self.shots])
        sims = self._embed(list(questions)) @ self._matrix.T
        out = []
        for row in sims:
            order = np.lexsort((np.arange(len(row)), -row))[:k]  # (-similarity, position)
            # the most similar shot goes last, right before the query
            out.append([self.shots[i] for i in reversed(order.tolist())])
        return out

    def info(self, k: int) -> dict:
        info = {"shots": len(self.shots), "k_shots": k}
        if len(self.shots) > k:
            info["shot_encoder"] = self.encoder_name
        return info
