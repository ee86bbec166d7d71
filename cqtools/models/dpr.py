"""DPR's two encoders (Karpukhin et al. 2020): a question encoder and a context encoder, each a
BERT whose [CLS] vector (``pooler_output``; no projection in the released models) is the
embedding; relevance is the raw inner product, never normalised.

Shaped like the model layer's other bi-encoders (``encode(texts, batch_size=..)`` -> ndarray,
``get_sentence_embedding_dimension()``), so the dense index code treats DPR and
sentence-transformers models alike. A context encoder encodes ``(title, text)`` as a BERT text
pair ("title [SEP] text"), as DPR and Pyserini's ``DprDocumentEncoder`` do; passages are cut at
256 tokens (Pyserini's default) and questions at the model's limit.
"""
from __future__ import annotations

import json
import os

from ..errors import ResourceError
from .cache import cached
from .load import run_config
from .resolve import ResolvedModel, resolve
from .runtime import pick_device

QUESTION, CONTEXT = "DPRQuestionEncoder", "DPRContextEncoder"
PASSAGE_MAX_LENGTH = 256


def dpr_kind(resolved: ResolvedModel) -> str | None:
    """``DPRQuestionEncoder`` / ``DPRContextEncoder`` for a DPR checkpoint directory, else None."""
    path = os.path.join(resolved.path, "config.json") if os.path.isdir(resolved.path) else None
    if not path or not os.path.exists(path):
        return None
    with open(path) as fh:
        config = json.load(fh)
    if config.get("model_type") != "dpr":
        return None
    kinds = [a for a in config.get("architectures") or [] if a in (QUESTION, CONTEXT)]
    if not kinds:
        raise ResourceError(f"{resolved.name} is a DPR checkpoint of unknown kind (architectures "
                            f"{config.get('architectures')}); pass a DPR question or context encoder")
    return kinds[0]


def is_dpr(name: str, config=None) -> bool:
    return dpr_kind(resolve(name, announce=False, config=config)) is not None


def question_encoder_for(ctx_name: str) -> str:
    """The question encoder paired with a context encoder by DPR's naming (``facebook/dpr-ctx_encoder-X``
    -> ``facebook/dpr-question_encoder-X``); an error when the name does not follow it."""
    if "ctx_encoder" not in ctx_name:
        raise ResourceError(f"cannot tell which question encoder goes with the DPR context encoder {ctx_name}; "
                            f"pass --query-encoder (e.g. facebook/dpr-question_encoder-multiset-base)")
    return ctx_name.replace("ctx_encoder", "question_encoder")


def load_dpr(name: str, device: str = "cpu", expect: str | None = None, config=None) -> "DPREncoder":
    """A DPR encoder built under ``config`` (default: one from the environment: :func:`cqtools.models.load.run_config`), loaded
    once per process through the model layer's cache (cqtools/models/cache.py); with ``expect``
    (``DPRQuestionEncoder`` or ``DPRContextEncoder``), an error when it is the other kind."""
    config = run_config(config)
    dev = pick_device(device)

    def build():
        resolved = resolve(name, config=config)
        kind = dpr_kind(resolved)
        if kind is None:
            raise ResourceError(f"{name} is not a DPR encoder (its config.json has no model_type 'dpr')")
        return DPREncoder(resolved, config, dev, kind)

    encoder = cached(("dpr", name, dev), build, config)
    if expect and encoder.kind != expect:
        raise ResourceError(f"{name} is a {encoder.kind}, but a {expect} is needed here")
    return encoder


class DPREncoder:
    """A DPR question or context encoder. Texts are encoded one at a time (no padding, so a
    vector never depends on its batch) unless ``CQ_PADDED_BATCHES=1``; padded batches pass the
    attention mask, as DPR's own code does."""

    def __init__(self, resolved: ResolvedModel, config, device: str = "cpu", kind: str | None = None):
        import torch
        import transformers
        from transformers import AutoTokenizer

        self.resolved, self.device = resolved, device
        self.kind = kind or dpr_kind(resolved)
        self.model = getattr(transformers, self.kind).from_pretrained(resolved.path).to(device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(resolved.path)
        self.max_length = PASSAGE_MAX_LENGTH if self.kind == CONTEXT else min(
            self.tokenizer.model_max_length, self.model.config.max_position_embeddings)
        self.padded = config.padded_batches
        self._torch = torch

    def encode(self, texts, batch_size: int = 32, normalize_embeddings: bool = False, convert_to_numpy: bool = True,
               show_progress_bar: bool = False, titles=None, **_):
        """Vectors for ``texts`` (questions, or passage texts with ``titles`` for a context encoder)."""
        import numpy as np

        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        if titles is not None:
            titles = list(titles)
        step = batch_size if self.padded else 1
        chunks = []
        for start in range(0, len(texts), step):
            part = texts[start:start + step]
            args = (titles[start:start + step], part) if titles is not None else (part,)
            inputs = self.tokenizer(*args, max_length=self.max_length, truncation=True, padding=True,
                                    return_tensors="pt").to(self.device)
            with self._torch.inference_mode():
                chunks.append(self.model(**inputs).pooler_output.float().cpu().numpy())
        out = np.concatenate(chunks) if chunks else np.zeros((0, self.model.config.hidden_size), dtype=np.float32)
        if normalize_embeddings and len(out):
            out = out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        out = out.astype(np.float32)
        return out[0] if single else out

    def get_sentence_embedding_dimension(self) -> int:
        return int(self.model.config.projection_dim or self.model.config.hidden_size)
