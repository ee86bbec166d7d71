"""Model backends with one call shape each: generators (causal LM, seq2seq), cross-encoders and
bi-encoders. Every ``load_*`` resolves the name (:func:`resolve`), loads once per process and
returns the same object for the same arguments.

torch, transformers, onnxruntime and sentence-transformers are imported inside the loaders, so
importing this module is cheap.
"""
from __future__ import annotations

import copy
import hashlib
import logging
import os
from typing import Sequence

from ..errors import ResourceError
from .resolve import ResolvedModel, resolve

log = logging.getLogger("cqtools")

_LOADED: dict[tuple, object] = {}


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
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def _mps_available() -> bool:
    import torch

    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def cache_dir() -> str:
    """Where converted weights live: ``$CQ_CACHE`` or ~/.cache/cqtools."""
    return os.environ.get("CQ_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "cqtools")


def _cached(key: tuple, build):
    _quiet_transformers()
    if key not in _LOADED:
        _LOADED[key] = build()
    return _LOADED[key]


def _quiet_transformers() -> None:
    """No weight-loading bars on stderr unless CQ_DEBUG is set (one-off conversions still say so)."""
    if os.environ.get("CQ_DEBUG"):
        return
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        return
    hf_logging.disable_progress_bar()


# ---------------------------------------------------------------------------------------------
# generators


def load_generator(name: str, device: str = "auto", dtype: str = "auto", kind: str = "auto") -> "Generator":
    """A :class:`Generator` for ``name`` (hub id, local dir, GGUF file or offline copy).

    ``kind`` is ``causal``, ``seq2seq`` or ``auto`` (read from the model config).
    """
    if kind not in ("auto", "causal", "seq2seq"):
        raise ValueError(f"kind must be auto, causal or seq2seq, not {kind!r}")
    dev = pick_device(device)

    def build():
        resolved = resolve(name)
        if resolved.fmt in ("onnx", "sentence-transformers"):
            raise ResourceError(f"{name} resolved to a {resolved.fmt} model, not a generator; pass a causal LM "
                                f"or seq2seq model (e.g. HuggingFaceTB/SmolLM2-135M-Instruct)")
        return Generator(resolved, dev, dtype, kind)

    return _cached(("generator", name, dev, dtype, kind), build)


def _gguf_to_safetensors(resolved: ResolvedModel) -> str:
    """Dequantise a GGUF checkpoint once into ``CQ_CACHE``; later loads read the safetensors copy."""
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
    stat = os.stat(source)
    digest = hashlib.sha1(f"{os.path.abspath(source)}:{stat.st_size}:{int(stat.st_mtime)}".encode()).hexdigest()[:12]
    target = os.path.join(cache_dir(), "gguf", f"{os.path.splitext(gguf_file)[0]}-{digest}")
    if os.path.exists(os.path.join(target, "config.json")):
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s to safetensors in %s (once; ~30 s)", gguf_file, target)
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


class Generator:
    """Greedy generation and continuation scoring with one call shape for causal and seq2seq LMs."""

    def __init__(self, resolved: ResolvedModel, device: str, dtype: str = "auto", kind: str = "auto",
                 batch_size: int = 16):
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        path = _gguf_to_safetensors(resolved) if resolved.fmt == "gguf" else resolved.path
        config = AutoConfig.from_pretrained(path)
        if kind == "auto":
            kind = "seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal"
        self.kind = kind
        self.name = resolved.name
        self.device = device
        self.batch_size = batch_size
        torch_dtype = pick_dtype(dtype, device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        cls = AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForCausalLM
        try:
            self.model = cls.from_pretrained(path, dtype=torch_dtype).to(device).eval()
        except (ValueError, OSError) as err:
            raise ResourceError(f"cannot load {resolved.name} as a {kind} LM: {str(err).splitlines()[0]}") from None
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left" if kind == "causal" else "right"
        self.has_chat = kind == "causal" and bool(getattr(self.tokenizer, "chat_template", None))
        probe = self.tokenizer("x").input_ids
        bos = self.tokenizer.bos_token_id
        self._bos = [bos] if kind == "causal" and bos is not None and probe and probe[0] == bos else []
        self.info = {"model": resolved.name, "source": resolved.source, "device": device,
                     "dtype": str(torch_dtype).replace("torch.", ""), "kind": kind}

    # -- prompting -------------------------------------------------------------------------------

    def chat_prompt(self, text: str) -> str:
        """``text`` as one user turn of the chat template, ready for the assistant's reply."""
        return self.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                  add_generation_prompt=True)

    def generate(self, prompts: list[str], max_new_tokens: int = 32, chat: bool | None = None,
                 stop: list[str] | None = None) -> list[str]:
        """Greedy continuations of ``prompts`` (chat template applied when the model has one and
        ``chat`` is not False), cut at the first of ``stop``; batched longest first."""
        import torch

        use_chat = self.has_chat if chat is None else (chat and self.has_chat)
        texts = [self.chat_prompt(p) if use_chat else p for p in prompts]
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        outputs: list[str] = [""] * len(texts)
        special = use_chat  # a chat template already contains the special tokens
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            enc = self.tokenizer([texts[i] for i in idx], return_tensors="pt", padding=True,
                                 add_special_tokens=not special).to(self.device)
            enc = {k: enc[k] for k in ("input_ids", "attention_mask")}  # no token_type_ids (BERT tokenizers)
            with torch.inference_mode():
                out = self.model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                          num_beams=1, pad_token_id=self.tokenizer.pad_token_id)
            if self.kind == "causal":
                out = out[:, enc["input_ids"].shape[1]:]
            for i, row in zip(idx, out):
                outputs[i] = _cut(self.tokenizer.decode(row, skip_special_tokens=True), stop)
        return outputs

    # -- scoring ---------------------------------------------------------------------------------

    def score(self, prompts: list[str], continuations: list[str], prefix: str = "") -> list[float]:
        """Summed log p(continuation | prefix + prompt) for each pair.

        Pieces are tokenized separately and concatenated, so the scores do not depend on whether
        the prefix's KV cache is reused; with a non-empty ``prefix`` (causal models) it is run once
        and its cache copied for every batch.
        """
        if len(prompts) != len(continuations):
            raise ValueError("prompts and continuations must have the same length")
        if not prompts:
            return []
        if self.kind == "seq2seq":
            return self._score_seq2seq([prefix + p for p in prompts], continuations)
        return self._score_causal(prompts, continuations, prefix, use_cache=True)

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids if text else []

    def _score_causal(self, prompts, continuations, prefix: str, use_cache: bool = True) -> list[float]:
        import torch

        prefix_ids = self._bos + self._ids(prefix)
        items = [(self._ids(p), self._ids(c)) for p, c in zip(prompts, continuations)]
        cache = last = None
        if use_cache and prefix and prefix_ids:
            with torch.inference_mode():
                out = self.model(torch.tensor([prefix_ids], device=self.device), use_cache=True)
            cache, last = out.past_key_values, torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        head = [] if cache is not None else prefix_ids
        if not head and any(not p and c for p, c in items) and cache is None:
            raise ValueError("cannot score a continuation with no context; pass a prompt or prefix")
        order = sorted(range(len(items)), key=lambda i: -sum(map(len, items[i])))
        scores = [0.0] * len(items)
        pad = self.tokenizer.pad_token_id
        offset = len(prefix_ids) if cache is not None else 0
        for start in range(0, len(order), self.batch_size):
            idx = [i for i in order[start:start + self.batch_size]]
            seqs = [head + items[i][0] + items[i][1] for i in idx]
            width = max(1, max(map(len, seqs)))
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for row, seq in enumerate(seqs):  # right padding: positions stay those of one sequence
                ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
                mask[row, :len(seq)] = 1
            kwargs = {}
            if cache is not None:
                past = copy.deepcopy(cache)
                if len(idx) > 1:
                    past.batch_repeat_interleave(len(idx))
                mask = torch.cat([torch.ones((len(idx), offset), dtype=torch.long), mask], dim=1)
                positions = torch.arange(offset, offset + width).expand(len(idx), -1)
                kwargs = {"past_key_values": past, "position_ids": positions.to(self.device)}
            with torch.inference_mode():
                hidden = self._hidden(ids.to(self.device), mask.to(self.device), kwargs)
                for row, i in enumerate(idx):
                    prompt_ids, cont_ids = items[i]
                    if not cont_ids:
                        continue
                    first = len(head) + len(prompt_ids)  # position of the first continuation token
                    target = torch.tensor(cont_ids, device=hidden.device)
                    # only the positions that predict continuation tokens go through the LM head
                    start_pos = max(first - 1, 0)
                    logprobs = torch.log_softmax(
                        self._head(hidden[row, start_pos:first - 1 + len(cont_ids)]).float(), dim=-1)
                    if first == 0:  # the first token is predicted by the prefix's last position
                        total = last[target[0]] + logprobs.gather(-1, target[1:, None]).sum()
                    else:
                        total = logprobs.gather(-1, target[:, None]).sum()
                    scores[i] = float(total)
        return scores

    def _hidden(self, ids, mask, kwargs):
        """Last hidden states (the LM head is applied only where needed), or logits for models
        without a separate head."""
        base = getattr(self.model, "base_model", None)
        if base is not None and base is not self.model and self.model.get_output_embeddings() is not None:
            self._head = self.model.get_output_embeddings()
            return base(input_ids=ids, attention_mask=mask, **kwargs).last_hidden_state
        self._head = lambda x: x
        return self.model(input_ids=ids, attention_mask=mask, **kwargs).logits

    def _score_seq2seq(self, sources: list[str], targets: list[str]) -> list[float]:
        import torch

        scores = [0.0] * len(sources)
        order = sorted(range(len(sources)), key=lambda i: -len(sources[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            enc = self.tokenizer([sources[i] for i in idx], return_tensors="pt", padding=True, truncation=True)
            labels = self.tokenizer(text_target=[targets[i] for i in idx], return_tensors="pt", padding=True)
            label_ids = labels.input_ids.masked_fill(labels.attention_mask == 0, -100)
            with torch.inference_mode():
                logits = self.model(input_ids=enc.input_ids.to(self.device), attention_mask=enc.attention_mask.to(
                    self.device), labels=label_ids.to(self.device)).logits
                logprobs = torch.log_softmax(logits.float(), dim=-1)
                safe = label_ids.clamp(min=0).to(logprobs.device)
                token_lp = logprobs.gather(-1, safe[..., None])[..., 0] * (label_ids != -100).to(logprobs.device)
            for row, i in enumerate(idx):
                scores[i] = float(token_lp[row].sum())
        return scores


def _cut(text: str, stop: Sequence[str] | None) -> str:
    for s in stop or ():
        pos = text.find(s)
        if pos >= 0:
            text = text[:pos]
    return text.strip()


# ---------------------------------------------------------------------------------------------
# cross-encoders


def load_cross_encoder(name: str, device: str = "auto"):
    """A cross-encoder with ``predict(pairs, batch_size=32) -> list[float]`` (raw logits)."""
    dev = pick_device(device)

    def build():
        resolved = resolve(name)
        if resolved.fmt == "onnx":
            return OnnxCrossEncoder(resolved)
        if resolved.fmt == "gguf":
            raise ResourceError(f"{name} is a GGUF language model, not a cross-encoder; pass a cross-encoder "
                                f"such as cross-encoder/ms-marco-MiniLM-L-12-v2")
        return HFCrossEncoder(resolved, dev)

    return _cached(("cross", name, dev), build)


def _onnx_session(path: str):
    import onnxruntime as ort

    options = ort.SessionOptions()
    threads = os.environ.get("CQ_ORT_THREADS")
    if threads:
        options.intra_op_num_threads = int(threads)
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


class OnnxCrossEncoder:
    """A BERT-style cross-encoder exported to ONNX, run with plain onnxruntime."""

    max_length = 512

    def __init__(self, resolved: ResolvedModel):
        from tokenizers import Tokenizer

        self.session = _onnx_session(os.path.join(resolved.path, "model.onnx"))
        self.tokenizer = Tokenizer.from_file(os.path.join(resolved.path, "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.no_padding()
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.name = resolved.name
        self.info = {"model": resolved.name, "source": resolved.source, "device": "cpu", "dtype": "int8-onnx"}

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]:
        import numpy as np

        encodings = self.tokenizer.encode_batch([(q, p) for q, p in pairs])
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        scores = [0.0] * len(encodings)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
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
    """sentence-transformers' CrossEncoder returning raw logits (no sigmoid)."""

    def __init__(self, resolved: ResolvedModel, device: str):
        import torch
        from sentence_transformers import CrossEncoder

        try:
            self.model = CrossEncoder(resolved.path, device=device)
        except (OSError, ValueError) as err:
            raise ResourceError(f"cannot load {resolved.name} as a cross-encoder: {str(err).splitlines()[0]}") from None
        self._identity = torch.nn.Identity()
        self.name = resolved.name
        self.info = {"model": resolved.name, "source": resolved.source, "device": device, "dtype": "float32"}

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]:
        if not pairs:
            return []
        scores = self.model.predict([list(p) for p in pairs], batch_size=batch_size, activation_fn=self._identity,
                                    show_progress_bar=False, convert_to_numpy=True)
        return [float(s if getattr(s, "ndim", 0) == 0 else s[0]) for s in scores]


# ---------------------------------------------------------------------------------------------
# bi-encoders


def load_encoder(name: str, device: str = "auto"):
    """A bi-encoder with ``encode(texts, batch_size=.., normalize_embeddings=True) -> ndarray``."""
    dev = pick_device(device)

    def build():
        resolved = resolve(name)
        if resolved.fmt == "onnx":
            return OnnxEncoder(resolved)
        if resolved.fmt == "gguf":
            raise ResourceError(f"{name} is a GGUF language model, not a sentence encoder")
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(resolved.path, device=dev)

    return _cached(("encoder", name, dev), build)


class OnnxEncoder:
    """A BERT-style bi-encoder in ONNX (CLS or mean pooling), shaped like SentenceTransformer."""

    def __init__(self, resolved: ResolvedModel, max_length: int = 512):
        from tokenizers import Tokenizer

        self.session = _onnx_session(os.path.join(resolved.path, "model.onnx"))
        self.tokenizer = Tokenizer.from_file(os.path.join(resolved.path, "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding()
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.pooling = resolved.files.get("pooling", "mean")

    def encode(self, texts, batch_size: int = 32, normalize_embeddings: bool = False, convert_to_numpy: bool = True,
               show_progress_bar: bool = False, **_):
        import numpy as np

        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        chunks = []
        for start in range(0, len(texts), batch_size):
            encs = self.tokenizer.encode_batch(texts[start:start + batch_size])
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


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (generation is greedy; this covers anything sampled)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
