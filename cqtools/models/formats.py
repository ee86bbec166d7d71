"""Local weight formats: how a model directory (or file) is recognised and loaded for each role.

Each format is registered through the plugin hook ``register_weight_formats`` like any method (cq's four
here, a plugin's beside them): its factory ``(resolved, role, device, dtype, kind, config)`` loads the resolved
model as ``role`` (generator, cross-encoder or encoder) under ``config`` (the run configuration the loader was
given) or raises a one-line error for a role it cannot serve;
``factory.detect(path)`` says whether a local path holds the format (cqtools/models/resolve.py asks each in
turn; the ``hf`` format, transformers' own files, is what a path holding no other is); ``factory.needs`` names the Python packages it loads with
(``cq models`` checks them). A new format (CTranslate2, MLX, ...) is one module and one hook, no loader edited.
"""
from __future__ import annotations

import os

from ..errors import ResourceError


def _files(path: str) -> set[str]:
    return set(os.listdir(path)) if os.path.isdir(path) else set()


def _not_a_generator(resolved) -> ResourceError:
    return ResourceError(f"{resolved.name} resolved to a {resolved.fmt} model, not a generator; pass a causal LM "
                         f"or seq2seq model (e.g. HuggingFaceTB/SmolLM2-135M-Instruct)")


def onnx(resolved, role: str, device: str, dtype: str, kind: str, config):
    """ONNX exports (model.onnx and a tokenizer), run by onnxruntime: the offline INT8 copies."""
    from .encoders import OnnxCrossEncoder, OnnxEncoder

    if role == "cross-encoder":
        return OnnxCrossEncoder(resolved, config, device)
    if role == "encoder":
        return OnnxEncoder(resolved, config, device=device)
    raise _not_a_generator(resolved)


onnx.detect = lambda path: "model.onnx" in _files(path)
onnx.needs = ("onnxruntime", "tokenizers")


def _onnx_place(device: str) -> str:
    """``factory.place``: where a format's models run for ``device`` (default: cqtools.models.runtime.pick_device,
    which asks torch); onnxruntime's models ask onnxruntime."""
    from .encoders import onnx_device

    return onnx_device(device)


onnx.place = _onnx_place


def gguf(resolved, role: str, device: str, dtype: str, kind: str, config):
    """GGUF language models (llama.cpp's files), dequantised into transformers."""
    from .generator import LocalGenerator

    if role == "cross-encoder":
        raise ResourceError(f"{resolved.name} is a GGUF language model, not a cross-encoder; pass a cross-encoder "
                            f"such as cross-encoder/ms-marco-MiniLM-L-12-v2")
    if role == "encoder":
        raise ResourceError(f"{resolved.name} is a GGUF language model, not a sentence encoder")
    return LocalGenerator(resolved.checked(), config, device, dtype, kind)


gguf.detect = lambda path: path.endswith(".gguf") or any(n.endswith(".gguf") for n in _files(path))
gguf.needs = ("gguf",)


def sentence_transformers(resolved, role: str, device: str, dtype: str, kind: str, config):
    """sentence-transformers directories (modules.json)."""
    if role == "generator":
        raise _not_a_generator(resolved)
    return hf(resolved, role, device, dtype, kind, config)


sentence_transformers.detect = lambda path: "modules.json" in _files(path)
sentence_transformers.needs = ("sentence_transformers",)


def hf(resolved, role: str, device: str, dtype: str, kind: str, config):
    """transformers' own files (config.json and weights; cq's int8-row copies too)."""
    from .encoders import HFCrossEncoder, SentenceEncoder
    from .runtime import remote_code
    from .generator import LocalGenerator

    if role == "cross-encoder":
        return HFCrossEncoder(resolved, config, device)
    if role == "encoder":
        from sentence_transformers import SentenceTransformer

        return SentenceEncoder(SentenceTransformer(resolved.path, device=device, **remote_code(config)), config)
    return LocalGenerator(resolved.checked(), config, device, dtype, kind)


hf.detect = None  # what a path holding no other format is
hf.needs = ()
