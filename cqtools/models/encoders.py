"""Local cross-encoders (INT8 ONNX or transformers) and bi-encoders (sentence-transformers or INT8
ONNX), each input alone at its own length (cqtools/models/__init__.py); cqtools/models/load.py loads them."""
from __future__ import annotations

import logging
import os

from ..config import RunConfig
from ..errors import ResourceError
from .batching import groups
from .cutting import context_length, input_limit, warn_cut
from .resolve import ResolvedModel
from .runtime import pick_device, remote_code

log = logging.getLogger("cqtools")


# ---------------------------------------------------------------------------------------------
# cross-encoders


def onnx_device(device: str = "auto") -> str:
    """Where an onnxruntime model runs: ``auto`` is cuda when this onnxruntime has the CUDA provider, else the
    CPU, asked of onnxruntime itself (torch is not imported for it: 1-2 s of a rerank process)."""
    if device != "auto":
        return pick_device(device)
    import onnxruntime as ort

    return "cuda" if "CUDAExecutionProvider" in ort.get_available_providers() else "cpu"


def onnx_providers(device: str, available: list[str]) -> list[str]:
    """onnxruntime execution providers for ``device``: CUDA first on a CUDA device when this
    onnxruntime build has it (onnxruntime-gpu), else the CPU."""
    if device.startswith("cuda") and "CUDAExecutionProvider" in available:
        index = device.split(":", 1)[1] if ":" in device else "0"
        return [("CUDAExecutionProvider", {"device_id": int(index)}), "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def _onnx_session(path: str, config: RunConfig, device: str = "cpu"):
    import onnxruntime as ort

    options = ort.SessionOptions()
    if config.ort_threads:
        options.intra_op_num_threads = int(config.ort_threads)
    if not config.ort_spin:
        # Idle pool threads sleep instead of spinning: in a pipeline every stage is a process on the
        # same cores, and spinning threads then take the cores the working ones need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    providers = onnx_providers(device, ort.get_available_providers())
    if device.startswith("cuda") and len(providers) == 1:
        log.info("%s: this onnxruntime has no CUDA provider, running on the CPU (pip install onnxruntime-gpu)", path)
    return ort.InferenceSession(path, options, providers=providers)


def _session_device(session) -> str:
    return "cuda" if "CUDAExecutionProvider" in session.get_providers() else "cpu"


class OnnxCrossEncoder:
    """A BERT-style cross-encoder exported to ONNX, run with plain onnxruntime.

    Each pair runs alone at its own length: the INT8 copies quantise activations with one scale
    per call (DynamicQuantizeLinear over the whole input tensor), so batch mates and padding would
    change a pair's score. Measured on 2 CPU cores this is as fast as padded batches
    (docs/benchmarks/determinism.md)."""

    max_length = 512

    def __init__(self, resolved: ResolvedModel, config: RunConfig, device: str = "cpu"):
        from tokenizers import Tokenizer

        self.session = _onnx_session(os.path.join(resolved.path, "model.onnx"), config, device)
        path = os.path.join(resolved.path, "tokenizer.json")
        self.tokenizer = Tokenizer.from_file(path)
        self.tokenizer.no_padding()
        self._full = Tokenizer.from_file(path)  # untruncated, to report how much a cut removed
        self._full.no_truncation()
        self._full.no_padding()
        self._truncation = None
        self._warned: dict = {}
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.name = resolved.name
        self.padded = config.padded_batches
        self.input_cap = config.max_input_tokens  # --max-input-tokens of the configuration that built it
        self.info = {"model": resolved.name, "source": resolved.source, "device": _session_device(self.session),
                     "dtype": "int8-onnx",
                     "batching": "padded" if self.padded else "per-item"}

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]:
        import numpy as np

        limit = input_limit(self.max_length, cap=self.input_cap)
        if limit != self._truncation:
            self.tokenizer.enable_truncation(limit)
            self._truncation = limit
        encodings = self.tokenizer.encode_batch([(q, p) for q, p in pairs])
        cuts = [(len(self._full.encode(*pairs[i]).ids), limit) for i, e in enumerate(encodings)
                if len(e.ids) >= limit and e.overflowing]
        warn_cut(self.name, cuts, limit, self._warned)
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        scores = [0.0] * len(encodings)
        for idx in groups(order, batch_size if self.padded else 1):
            width = max(len(encodings[i].ids) for i in idx)
            arrays = {k: np.zeros((len(idx), width), dtype=np.int64)
                      for k in ("input_ids", "attention_mask", "token_type_ids")}
            for row, i in enumerate(idx):
                enc = encodings[i]
                n = len(enc.ids)
                arrays["input_ids"][row, :n] = enc.ids
                arrays["attention_mask"][row, :n] = enc.attention_mask
                arrays["token_type_ids"][row, :n] = enc.type_ids
            logits = self.session.run(None, {k: v for k, v in arrays.items() if k in self.inputs})[0]
            for row, i in enumerate(idx):
                scores[i] = float(logits[row, 0])
        return scores


class HFCrossEncoder:
    """sentence-transformers' CrossEncoder returning raw logits (no sigmoid); one pair per forward
    pass unless ``CQ_PADDED_BATCHES=1``."""

    def __init__(self, resolved: ResolvedModel, config: RunConfig, device: str):
        import torch
        from sentence_transformers import CrossEncoder

        try:
            self.model = CrossEncoder(resolved.path, device=device, **remote_code(config))
        except (OSError, ValueError) as err:
            raise ResourceError(f"cannot load {resolved.name} as a cross-encoder: {str(err).splitlines()[0]}") from None
        self._identity = torch.nn.Identity()
        self._context = self.model.max_seq_length or context_length(self.model.config, self.model.tokenizer)
        self._warned: dict = {}
        self.name = resolved.name
        self.padded = config.padded_batches
        self.input_cap = config.max_input_tokens  # --max-input-tokens of the configuration that built it
        self.info = {"model": resolved.name, "source": resolved.source, "device": device, "dtype": "float32",
                     "batching": "padded" if self.padded else "per-item"}

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]:
        if not pairs:
            return []
        limit = input_limit(self._context, cap=self.input_cap)
        self.model.max_seq_length = limit
        # a pair can only be over the limit if it has more characters than the limit has tokens
        long = [p for p in pairs if len(p[0]) + len(p[1]) + 3 > limit]
        if long:
            tok = self.model.tokenizer
            lengths = [len(tok(q, p, verbose=False).input_ids) for q, p in long]
            warn_cut(self.name, [(n, limit) for n in lengths if n > limit], limit, self._warned)
        scores = self.model.predict([list(p) for p in pairs], batch_size=batch_size if self.padded else 1,
                                    activation_fn=self._identity, show_progress_bar=False, convert_to_numpy=True)
        return [float(s if getattr(s, "ndim", 0) == 0 else s[0]) for s in scores]


# ---------------------------------------------------------------------------------------------
# bi-encoders


class SentenceEncoder:
    """A SentenceTransformer that encodes each text alone (no padding, so no batch dependence)
    unless ``CQ_PADDED_BATCHES=1``; everything else is the model's own."""

    def __init__(self, model, config: RunConfig):
        self.model = model
        self.padded = config.padded_batches
        self.input_cap = config.max_input_tokens  # --max-input-tokens of the configuration that built it

    def encode(self, texts, batch_size: int = 32, **kwargs):
        return self.model.encode(texts, batch_size=batch_size if self.padded else 1, **kwargs)

    def __getattr__(self, name):
        if name == "model":  # not set yet (copy/pickle)
            raise AttributeError(name)
        return getattr(self.model, name)


class OnnxEncoder:
    """A BERT-style bi-encoder in ONNX (CLS or mean pooling), shaped like SentenceTransformer."""

    def __init__(self, resolved: ResolvedModel, config: RunConfig, max_length: int = 512, device: str = "cpu"):
        from tokenizers import Tokenizer

        self.session = _onnx_session(os.path.join(resolved.path, "model.onnx"), config, device)
        self.device = _session_device(self.session)
        self.tokenizer = Tokenizer.from_file(os.path.join(resolved.path, "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding()
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.pooling = resolved.files.get("pooling", "mean")
        self.padded = config.padded_batches
        self.input_cap = config.max_input_tokens  # --max-input-tokens of the configuration that built it

    def encode(self, texts, batch_size: int = 32, normalize_embeddings: bool = False, convert_to_numpy: bool = True,
               show_progress_bar: bool = False, **_):
        """Each text alone at its own length (an INT8 copy's activation scales are per call), or
        padded batches of ``batch_size`` with ``CQ_PADDED_BATCHES=1``."""
        import numpy as np

        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        step = batch_size if self.padded else 1
        chunks = []
        for start in range(0, len(texts), step):
            encs = self.tokenizer.encode_batch(texts[start:start + step])
            feed = {"input_ids": np.array([e.ids for e in encs], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encs], dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in encs], dtype=np.int64)}
            hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
            if self.pooling == "cls":
                vectors = hidden[:, 0]
            else:
                mask = feed["attention_mask"][..., None].astype(hidden.dtype)
                vectors = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
            chunks.append(vectors)
        out = np.concatenate(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)
        if normalize_embeddings and len(out):
            out = out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        out = out.astype(np.float32)
        return out[0] if single else out

    def get_sentence_embedding_dimension(self) -> int:
        return int(self.encode(["x"]).shape[1])
