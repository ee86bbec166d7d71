"""Compact weights for the models cq ships (cqtools/shipped/): int8 per row, computed in float32.

``cq train compact SRC --out DST`` rewrites a trained model directory (``model.safetensors``) as
``model.int8.safetensors``: every float matrix of at least :data:`MIN_ELEMENTS` values (the linear
layers and the embeddings: almost all of a MiniLM's 22.7M parameters) becomes int8 with one float32
scale per row (symmetric, ``scale = max|row| / 127``); vectors (biases, LayerNorm) stay float32.
Loading (:func:`load_state`, used by ``load_transformers``) multiplies the rows back into float32
weights, so inference is the plain float32 model: the same numbers on any CPU (unlike onnxruntime's
INT8 kernels, which differ by instruction set) and on a GPU. A MiniLM-L6 goes from 91 MB to 23 MB.
What the rounding costs is measured per model (docs/benchmarks/shipped.md). ``cq_compact.json`` records
the compact file's sha256, checked before every load (cqtools/models/checks.py).
"""
from __future__ import annotations

import json
import os
import shutil

from ..errors import InputError
from .checks import COMPACT_WEIGHTS, check_safetensors

WEIGHTS = COMPACT_WEIGHTS
FORMAT = "cq-int8-rows"
MIN_ELEMENTS = 4096
SCALE = ".cq_scale"  # key suffix of a quantised matrix's row scales
# Files of a model directory copied as they are (tokenizer, config, the training report).
COPIED = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
          "cq_train.json", "selection_head.json", "cq_threshold.json")


def is_compact(path: str) -> bool:
    """Whether the directory ``path`` holds compact weights (and no full-precision ones)."""
    return (os.path.isfile(os.path.join(path, WEIGHTS))
            and not os.path.isfile(os.path.join(path, "model.safetensors")))


def quantize(state: dict) -> dict:
    """The compact state dict of a float ``state``: int8 rows + float32 scales, small tensors as they are."""
    import torch

    out = {}
    for name, tensor in state.items():
        tensor = tensor.detach().to("cpu").contiguous()
        if tensor.is_floating_point() and tensor.dim() == 2 and tensor.numel() >= MIN_ELEMENTS:
            weight = tensor.float()
            scale = weight.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
            out[name] = torch.round(weight / scale).clamp(-127, 127).to(torch.int8).contiguous()
            out[name + SCALE] = scale.squeeze(1).contiguous()
        else:
            out[name] = tensor.float() if tensor.is_floating_point() else tensor
    return out


def dequantize(compact: dict) -> dict:
    """The float32 state dict of a compact one (:func:`quantize`'s inverse, up to its rounding)."""
    out = {}
    for name, tensor in compact.items():
        if name.endswith(SCALE):
            continue
        scale = compact.get(name + SCALE)
        out[name] = tensor.float() * scale.unsqueeze(1) if scale is not None else tensor
    return out


def load_state(path: str) -> dict:
    """The float32 state dict of the compact model directory ``path``."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    file = os.path.join(path, WEIGHTS)
    with safe_open(file, "pt") as fh:
        meta = fh.metadata() or {}
    if meta.get("format") != FORMAT:
        raise InputError(f"{file} is not cq's compact format ({FORMAT}); rebuild it with cq train compact")
    return dequantize(load_file(file))


def float_copy_path(path: str, cache_root: str) -> str:
    """Where the float32 copy of compact directory ``path`` lives in the cache folder ``cache_root``
    (``CQ_CACHE``): named by the compact weights' sha256 (cq_compact.json, checked before every load) and its
    config, so every clone and venv holding the same model shares one copy."""
    import hashlib

    with open(os.path.join(path, "cq_compact.json")) as fh:
        digest = hashlib.sha1(json.load(fh)["sha256"].encode())
    with open(os.path.join(path, "config.json"), "rb") as fh:
        digest.update(fh.read())
    return os.path.join(cache_root, "compact", f"{os.path.basename(os.path.abspath(path))}-{digest.hexdigest()[:12]}")


def load_model(path: str, auto_class, cache_root: str):
    """``auto_class`` (e.g. ``AutoModelForQuestionAnswering``) built from ``path``'s config, its
    weights from the compact file. The float32 weights are written once into ``CQ_CACHE`` (compact/), and
    later loads read that copy: the same tensors (tests/test_shipped.py), without multiplying the rows back
    and building a randomly initialised model first (2-3 s of every cell's start on a busy 2-core machine,
    0.2-0.3 s from the copy; docs/benchmarks/smoke.md)."""
    copy = float_copy_path(path, cache_root)
    if os.path.isfile(os.path.join(copy, "model.safetensors")):
        return auto_class.from_pretrained(copy)
    from transformers import AutoConfig

    model = auto_class.from_config(AutoConfig.from_pretrained(path))
    state = load_state(path)
    missing, unexpected = model.load_state_dict(state, strict=False)
    # Tied or recomputed buffers (position ids) may be absent; a missing weight is a broken file.
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise InputError(f"{path}: compact weights do not fit {auto_class.__name__} "
                         f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
    _write_float_copy(path, state, copy)
    return model


def _write_float_copy(path: str, state: dict, copy: str) -> None:
    """The float32 weights and config of ``path`` into ``copy``, all or nothing (a temporary folder renamed;
    a process that loses the race leaves the winner's); an unwritable cache is only a slower next load."""
    from safetensors.torch import save_file

    partial = f"{copy}.part{os.getpid()}"
    try:
        os.makedirs(partial, exist_ok=True)
        save_file({k: v.contiguous() for k, v in state.items()}, os.path.join(partial, "model.safetensors"),
                  metadata={"format": "pt"})
        shutil.copy2(os.path.join(path, "config.json"), os.path.join(partial, "config.json"))
        os.replace(partial, copy)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)


def compact(src: str, out: str) -> dict:
    """Write ``src`` (a `cq train ...` directory with model.safetensors) to the empty directory ``out`` in
    the compact format; returns its summary (sizes, largest weight error), also written to
    ``out/cq_compact.json``. (`cq train compact` writes into cqtools.outputs.model_directory's staging
    folder, so an old model is replaced only once the new one is complete.)"""
    from safetensors.torch import load_file, save_file

    from ..data import sha256_of

    weights = os.path.join(src, "model.safetensors")
    if not os.path.isfile(weights):
        raise InputError(f"{src} has no model.safetensors; pass a directory written by cq train")
    check_safetensors(weights, src)  # cut or random weights: one line, not a SafetensorError
    state = load_file(weights)
    packed = quantize(state)
    save_file(packed, os.path.join(out, WEIGHTS), metadata={"format": FORMAT})
    os.chmod(os.path.join(out, WEIGHTS), 0o644)  # safetensors writes 0600; the file ships with the package
    for name in COPIED:
        if os.path.isfile(os.path.join(src, name)):
            shutil.copy2(os.path.join(src, name), os.path.join(out, name))
    restored = dequantize(packed)
    error = max(float((restored[k].float() - v.float()).abs().max()) for k, v in state.items() if v.is_floating_point())
    summary = {"format": FORMAT, "source_sha256": sha256_of(weights),
               "source_bytes": os.path.getsize(weights), "bytes": os.path.getsize(os.path.join(out, WEIGHTS)),
               "sha256": sha256_of(os.path.join(out, WEIGHTS)),  # checked before every load (models/checks.py)
               "quantised_tensors": sum(1 for k in packed if k.endswith(SCALE)), "max_abs_weight_error": error}
    with open(os.path.join(out, "cq_compact.json"), "w") as fh:
        json.dump(summary, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return summary
