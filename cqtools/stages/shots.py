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

Shot = tuple[str, list[tuple[str, str]]]
DEFAULT_ENCODER = role("encoder").default


def builtin_shots() -> list[Shot]:
    return [(q, list(pairs)) for q, pairs in prompts_disamb.DISAMBIG_EXAMPLES]


def shot_from_record(record: dict, max_pairs: int = 4) -> Shot | None:
    """A shot from a record's gold or predicted disambiguations (None when it has fewer than two)."""
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
    if not question or len(pairs) < 2:
        return None
    return str(question), pairs[:max_pairs]


def load_shots(path: str, max_pairs: int = 4) -> list[Shot]:
    """Shots from a JSON/JSONL file of records (see the module docstring)."""
    try:
        shots = [s for r in load_json_or_jsonl(path) if isinstance(r, dict)
                 and (s := shot_from_record(r, max_pairs)) is not None]
    except FileNotFoundError:
        raise ResourceError(f"--shots {path}: no such file") from None
    if not shots:
        raise InputError(f"--shots {path} has no record with two or more disambiguations (gold.dqs or dqs); "
                         "pass records from `cq convert ambignq` (e.g. train_light.json)")
    return shots


class ShotSelector:
    """``select(questions, k)``: the k shots whose questions are most similar to each question.

    With no more shots than ``k`` every shot is used as is and no encoder is loaded."""

    def __init__(self, shots: Sequence[Shot], encoder=None, encoder_name: str = DEFAULT_ENCODER,
                 device: str = "auto", batch_size: int = 64):
        self.shots = list(shots)
        self._encoder = encoder
        self.encoder_name = encoder_name
        self.device = device
        self.batch_size = batch_size
        self._matrix = None

    @property
    def encoder(self):
        if self._encoder is None:
            from ..models import load_encoder

            self._encoder = load_encoder(self.encoder_name, self.device)
        return self._encoder

    def _embed(self, texts: list[str]):
        import numpy as np

        vectors = self.encoder.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

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
