"""GGUF checkpoints (the offline SmolLM2 copy, ``--model FILE.gguf``): dequantised once into a
safetensors copy in ``CQ_CACHE``, named by the file's content, which later loads read."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os

from ..errors import ResourceError
from .resolve import ResolvedModel

log = logging.getLogger("cqtools")


@contextlib.contextmanager
def quiet_bar(quiet: bool):
    """transformers' GGUF loader draws a plain tqdm bar that its progress-bar switch does not reach:
    while converting under -q, its module's ``tqdm`` is a disabled one."""
    if not quiet:
        yield
        return
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    original = getattr(gguf_utils, "tqdm", None)
    if original is not None:
        gguf_utils.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        if original is not None:
            gguf_utils.tqdm = original


def converted_path(source: str, cache_root: str, edge: int = 1 << 20) -> str:
    """Where the safetensors copy of GGUF file ``source`` lives in the cache folder ``cache_root`` (``CQ_CACHE``): named by the file's
    content (its size and its first and last MiB), so every clone and virtualenv holding the same
    file shares one copy (the path and mtime named it before: each venv converted 517 MB again)."""
    size = os.path.getsize(source)
    digest = hashlib.sha1(str(size).encode())
    with open(source, "rb") as fh:
        digest.update(fh.read(edge))
        fh.seek(max(0, size - edge))
        digest.update(fh.read(edge))
    name = os.path.splitext(os.path.basename(source))[0]
    return os.path.join(cache_root, "gguf", f"{name}-{digest.hexdigest()[:12]}")


def to_safetensors(resolved: ResolvedModel, cache_root: str) -> str:
    """Dequantise a GGUF checkpoint once into the cache folder ``cache_root`` (``CQ_CACHE``); later loads read
    the safetensors copy."""
    gguf_file = resolved.files.get("gguf_file")
    folder = resolved.path
    if os.path.isfile(folder):
        folder, gguf_file = os.path.dirname(folder), os.path.basename(folder)
    if gguf_file is None:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".gguf"))
        if not names:
            raise ResourceError(f"no .gguf file in {folder}")
        gguf_file = names[0]
    source = os.path.join(folder, gguf_file)
    target = converted_path(source, cache_root)
    if os.path.exists(os.path.join(target, "config.json")):
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s to safetensors in %s (once; ~30 s)", gguf_file, target)
    with quiet_bar(not log.isEnabledFor(logging.INFO)):  # -q: no de-quantising progress bar either
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = f"{target}.part{os.getpid()}"
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    try:
        os.replace(partial, target)
    except OSError:  # another process converted it first
        import shutil

        shutil.rmtree(partial, ignore_errors=True)
    return target
