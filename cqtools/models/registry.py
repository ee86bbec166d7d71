"""The default model of each role, and whether it can be used on this machine (``cq models``)."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from ..errors import ResourceError
from .resolve import OFFLINE, resolve

SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class Role:
    role: str
    default: str
    used_by: str
    env: str


ROLES: tuple[Role, ...] = (
    Role("encoder", "sentence-transformers/all-MiniLM-L6-v2", "cq index --dense, cq retrieve --method dense",
         "--encoder"),
    Role("reranker", "cross-encoder/ms-marco-MiniLM-L-12-v2", "cq rerank, cq answer --mode cq", "CQ_MODEL_RERANKER"),
    Role("reader", SMOLLM2, "cq answer", "CQ_MODEL_READER"),
    Role("detector", SMOLLM2, "cq detect --method llm", "CQ_MODEL_DETECTOR"),
    Role("generator", SMOLLM2, "cq gen-cq --method llm", "CQ_MODEL_GEN_CQ"),
)

# Python packages a weight format needs besides torch/transformers.
NEEDS = {"onnx": ("onnxruntime", "tokenizers"), "gguf": ("gguf",), "sentence-transformers": ("sentence_transformers",)}


def status(name: str) -> dict:
    """Where ``name`` resolves from and whether its loader's packages are installed (no loading)."""
    try:
        model = resolve(name, announce=False)
    except ResourceError as err:
        return {"model": name, "usable": False, "source": None, "path": None, "format": None, "problem": str(err)}
    missing = [p for p in NEEDS.get(model.fmt, ()) if importlib.util.find_spec(p) is None]
    problem = f"needs {', '.join(missing)}: pip install {' '.join(missing)}" if missing else None
    return {"model": model.name, "usable": not missing, "source": model.source, "path": model.path,
            "format": model.fmt, "problem": problem}


def offline_models() -> list[str]:
    return sorted(OFFLINE)
