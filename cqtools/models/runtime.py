"""What every local backend shares: the device and dtype, how weights are placed and loaded, and seeding
(the loaded-model cache is cqtools/models/cache.py; input limits and stop strings cqtools/models/cutting.py;
batching cqtools/models/batching.py).

Every function here that depends on the run configuration takes it as an argument: a model is built
under the :class:`~cqtools.config.RunConfig` its loader was given and keeps it (``model.config``); there is no
process-wide configuration to read (a Python caller passes one, e.g. ``RunConfig.from_env().replace(
max_input_tokens=512)``)."""
from __future__ import annotations

import hashlib
import logging
import os
from typing import Sequence

from ..config import RunConfig
from ..errors import ResourceError

log = logging.getLogger("cqtools")



def prompt_seed(seed: int | None, prompt: str) -> int:
    """The sampling seed of one prompt: a 31-bit number from ``seed`` and the prompt's text (the same
    prompt under the same seed samples the same text, in any batch and any process)."""
    digest = hashlib.sha256(f"{seed if seed is not None else 0}\0{prompt}".encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def prompt_seeds(seed, prompts: Sequence[str]) -> list[int]:
    """:func:`prompt_seed` of each prompt; ``seed`` is one int (or None) for all, or one per prompt."""
    seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed] * len(prompts)
    if len(seeds) != len(prompts):
        raise ValueError(f"{len(seeds)} seeds for {len(prompts)} prompts")
    return [prompt_seed(s, p) for s, p in zip(seeds, prompts)]


# ---------------------------------------------------------------------------------------------
# placement


def pick_device(device: str = "auto") -> str:
    """``auto`` -> this process's accelerate device (its GPU under ``accelerate launch``), else cpu."""
    if device != "auto":
        if device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise ResourceError("--device cuda asked for, but torch sees no CUDA GPU; pass --device cpu")
        return device
    import torch

    if not (torch.cuda.is_available() or _mps_available()):
        return "cpu"
    from accelerate import PartialState

    return str(PartialState().device)


def pick_dtype(dtype: str, device: str):
    """``auto``: bfloat16 on a GPU that supports it (float16 on an older CUDA GPU), float32 elsewhere."""
    import torch

    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


# ---------------------------------------------------------------------------------------------
# how local weights are fetched and loaded (--revision, --trust-remote-code, --quantize)


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def weights_bytes(path: str) -> int:
    """Bytes of weight files under ``path`` (a model folder or one file)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _, names in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, n)) for n in names if n.endswith(WEIGHT_SUFFIXES))
    return total


def gpu_bytes(device: str) -> int | None:
    """Memory of ``device``'s GPU; None for a CPU or MPS device."""
    if not device.startswith("cuda"):
        return None
    import torch

    index = int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
    return int(torch.cuda.get_device_properties(index).total_memory)


def wants_device_map(weights: int, gpu: int | None, processes: int = 1, headroom: float = 0.8) -> bool:
    """Spread a model over every visible GPU (``device_map="auto"``) when its weights would not fit in
    ``headroom`` of one GPU; never under a multi-process ``accelerate launch`` (each process holds one
    whole copy on its own GPU) and never without a GPU."""
    return gpu is not None and processes == 1 and weights > headroom * gpu


def _processes() -> int:
    try:
        from accelerate import PartialState

        return PartialState().num_processes
    except Exception:  # pragma: no cover - accelerate missing or not initialisable
        return 1


def quantization_config(quantize: str | None, device: str):
    """transformers' BitsAndBytesConfig for ``--quantize``; a one-line error when bitsandbytes is not
    installed or there is no CUDA GPU."""
    if quantize is None:
        return None
    import importlib.util

    if importlib.util.find_spec("bitsandbytes") is None:
        raise ResourceError(f"--quantize {quantize} needs bitsandbytes: pip install bitsandbytes "
                            f"(or leave out --quantize to load full-precision weights)")
    if not device.startswith("cuda"):
        raise ResourceError(f"--quantize {quantize} needs a CUDA GPU (device is {device}); leave out --quantize "
                            f"on this machine")
    from transformers import BitsAndBytesConfig

    if quantize == "8bit":
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                              bnb_4bit_compute_dtype=pick_dtype("auto", device))


def load_kwargs(path: str, device: str, torch_dtype, config: RunConfig) -> tuple[dict, bool]:
    """``from_pretrained`` keyword arguments for the weights at ``path`` on ``device`` under ``config``,
    and whether the caller still has to move the model there (False when accelerate places it: a
    device map or quantized weights)."""
    kwargs: dict = {}
    if torch_dtype is not None:
        kwargs["dtype"] = torch_dtype
    if config.trust_remote_code:
        kwargs["trust_remote_code"] = True
    quant = quantization_config(config.quantize, device)
    if quant is not None:
        kwargs["quantization_config"] = quant
        kwargs["device_map"] = "auto" if _processes() == 1 else {"": device}
        return kwargs, False
    if wants_device_map(weights_bytes(path), gpu_bytes(device), _processes()):
        log.info("%s: weights larger than one GPU; spreading them over the visible GPUs (device_map=auto)", path)
        kwargs["device_map"] = "auto"
        return kwargs, False
    return kwargs, True


def input_device(model, device: str) -> str:
    """Where a loaded model's inputs go: ``device``, or its first layer's device under a device map."""
    if getattr(model, "hf_device_map", None) or getattr(model, "is_quantized", False):
        return str(model.device)
    return device


def _mps_available() -> bool:
    import torch

    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def remote_code(config: RunConfig) -> dict:
    """``from_pretrained``'s keyword for a hub model's own code, when ``config`` allows it."""
    return {"trust_remote_code": True} if config.trust_remote_code else {}


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (generation is greedy; this covers anything sampled)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
