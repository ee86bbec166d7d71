"""A local model directory checked for what its format needs before anything loads it.

transformers copes with a half-present directory in ways that change results without a word: no
tokenizer file gives a 5-token BertTokenizer that reads every word as [UNK]; cut or random weights
end in a SafetensorError traceback. So a transformers directory must hold a config, a tokenizer
(tokenizer.json, or a vocabulary file its tokenizer class reads) and weights whose safetensors
headers describe exactly the bytes the files hold; cq's compact weights must match the sha256 their
``cq_compact.json`` records. Each failure is a one-line :class:`ResourceError` naming the fix.
"""
from __future__ import annotations

import json
import os
import struct

from ..errors import ResourceError

# Files from which a tokenizer can be built (one is enough): the fast tokenizer's own file, or the
# vocabulary a slow tokenizer reads (WordPiece, BPE, SentencePiece, tiktoken).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model",
                   "sentencepiece.bpe.model")
COMPACT_WEIGHTS = "model.int8.safetensors"  # cq's compact weights (compact.py's WEIGHTS)
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json", COMPACT_WEIGHTS)
_VERIFIED: dict[tuple, bool] = {}  # (path, size, mtime) of compact weights whose sha256 matched


def check_transformers_dir(path: str, what: str = "the model") -> None:
    """Raise a one-line ResourceError unless the directory ``path`` has what transformers needs."""
    if not os.path.isdir(path):
        return  # a hub id or a file: its loader's business
    names = set(os.listdir(path))
    if "config.json" not in names:
        raise ResourceError(f"{what} at {path} has no config.json; pass a complete model directory (one written by "
                            f"`cq train` or save_pretrained)")
    if not (names & set(TOKENIZER_FILES) or any(n.endswith(".tiktoken") for n in names)):
        raise ResourceError(f"{what} at {path} has no tokenizer ({', '.join(TOKENIZER_FILES[:3])} ...): without one "
                            f"every word would be read as unknown; copy the tokenizer files of the model it came from")
    weights = [n for n in WEIGHT_FILES if n in names] + sorted(n for n in names if n.endswith(".safetensors")
                                                               and n not in WEIGHT_FILES)
    if not weights:
        raise ResourceError(f"{what} at {path} has no weights ({', '.join(WEIGHT_FILES[:3])}); pass a complete "
                            f"model directory")
    for name in weights:
        if name.endswith(".safetensors"):
            check_safetensors(os.path.join(path, name), what)
    if COMPACT_WEIGHTS in names:
        check_compact_sum(path, what)


def check_safetensors(file: str, what: str = "the model") -> None:
    """A safetensors file's header read and its tensors' extent compared with the file's size: a cut,
    padded or random file is a one-line error (the tensors themselves are read by the loader)."""
    fix = "it is cut short or damaged; copy or train it again"
    try:
        size = os.path.getsize(file)
        with open(file, "rb") as fh:
            head = fh.read(8)
            length = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            if length < 2 or 8 + length > size or length > 100 << 20:
                raise ValueError("no safetensors header")
            header = json.loads(fh.read(length))
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise ResourceError(f"{what}: cannot read the weights {file} ({err}); {fix}") from None
    if not isinstance(header, dict):
        raise ResourceError(f"{what}: cannot read the weights {file} (its header is not a JSON object); {fix}")
    ends = [info["data_offsets"][1] for key, info in header.items()
            if key != "__metadata__" and isinstance(info, dict) and len(info.get("data_offsets") or ()) == 2]
    if 8 + length + max(ends, default=0) != size:
        raise ResourceError(f"{what}: the weights {file} hold {size} bytes, their header describes "
                            f"{8 + length + max(ends, default=0)}; {fix}")


def check_compact_sum(path: str, what: str = "the model") -> None:
    """cq's compact weights against the sha256 recorded when they were written (``cq_compact.json``)."""
    from ..data import sha256_of

    file = os.path.join(path, COMPACT_WEIGHTS)
    try:
        with open(os.path.join(path, "cq_compact.json")) as fh:
            want = json.load(fh).get("sha256")
    except (OSError, ValueError, AttributeError):
        want = None
    if not want:
        return  # compacted before the sum was recorded
    stat = os.stat(file)
    key = (os.path.realpath(file), stat.st_size, stat.st_mtime_ns)
    if key in _VERIFIED:
        return
    got = sha256_of(file)
    if got != want:
        raise ResourceError(f"{what}: the compact weights {file} do not match their recorded sha256 ({got[:12]} != "
                            f"{want[:12]}): the file changed since `cq train compact` wrote it; reinstall cq, or "
                            f"compact the model again")
    _VERIFIED[key] = True
