"""Model backends with one call shape each: generators (causal LM, seq2seq), cross-encoders and
bi-encoders. Every ``load_*`` resolves the name (:func:`resolve`), loads once per process and
returns the same object for the same arguments.

torch, transformers, onnxruntime and sentence-transformers are imported inside the loaders, so
importing this module is cheap.

Batch invariance: every backend computes each input alone, at its own length (no padding, no
batch mates), so a record's scores and generations do not depend on ``--batch-size``, ``--shard``,
a resume or the number of processes. The INT8 ONNX copies quantise activations dynamically, with
one scale for a call's whole tensor, so a padded batch changes every member's scores (by up to
0.9 logits); torch models' padded batches differ by ~1e-6. ``CQ_PADDED_BATCHES=1`` brings padded
batches back (faster on a GPU, batch dependent). docs/benchmarks/determinism.md has the costs.

Input limits: prompts longer than the model's context (or ``--max-input-tokens``) are cut in the
middle, keeping their start (instructions, shots) and end (the question's cue), with a warning.
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
_MAX_INPUT_TOKENS: int | None = None
DEFAULT_CONTEXT = 4096  # for a model whose config and tokenizer name no context length


# ---------------------------------------------------------------------------------------------
# batch invariance and input limits


def padded_batches() -> bool:
    """True when ``CQ_PADDED_BATCHES`` asks for padded (faster, batch-dependent) model batches."""
    return os.environ.get("CQ_PADDED_BATCHES", "") not in ("", "0")


def set_max_input_tokens(limit: int | None) -> None:
    """Process-wide cap on a model input's tokens (``--max-input-tokens``); None: the model's context."""
    global _MAX_INPUT_TOKENS
    _MAX_INPUT_TOKENS = limit


def max_input_tokens() -> int | None:
    return _MAX_INPUT_TOKENS


def _groups(order: list[int], size: int):
    for start in range(0, len(order), size):
        yield order[start:start + size]


def cut_middle(ids: list, budget: int) -> list:
    """``ids`` cut to ``budget`` items by dropping the middle: the start and the end are kept."""
    if len(ids) <= budget:
        return ids
    head = budget // 2
    tail = budget - head
    return ids[:head] + (ids[len(ids) - tail:] if tail else [])


def _warn_cut(name: str, cuts: list[tuple[int, int]], limit: int, once: dict | None = None) -> None:
    """One stderr line per call naming how much was cut (``cuts``: tokens before and after each
    cut); with ``once`` (a backend's flag dict), only the first call warns, later ones log at info."""
    if not cuts:
        return
    level = logging.WARNING
    if once is not None:
        level = logging.INFO if once.get("warned") else logging.WARNING
        once["warned"] = True
    removed = sum(before - after for before, after in cuts)
    longest = max(before for before, _ in cuts)
    log.log(level, "%s: %d input(s) over the %d-token limit cut in the middle (longest %d tokens; %d tokens "
            "removed in all); --max-input-tokens sets the limit", name, len(cuts), limit, longest, removed)


def _context_length(config, tokenizer=None) -> int:
    """The longest input a model takes: the smallest of its position table and its tokenizer's limit."""
    sizes = [getattr(config, k, None) for k in ("max_position_embeddings", "n_positions", "max_sequence_length")]
    tok = getattr(tokenizer, "model_max_length", None)
    sizes.append(tok if isinstance(tok, int) and tok < 1_000_000 else None)
    known = [s for s in sizes if isinstance(s, int) and s > 0]
    return min(known) if known else DEFAULT_CONTEXT


def _limit(context: int, reserve: int = 0) -> int:
    """Tokens an input may have: the context less ``reserve`` (tokens still to generate), or
    ``--max-input-tokens`` when that is smaller."""
    limit = max(1, context - reserve)
    return limit if _MAX_INPUT_TOKENS is None else max(1, min(limit, _MAX_INPUT_TOKENS))


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


from . import openai_backend  # noqa: E402  registers "openai" in BACKENDS (cheap: no client import)


def load_generator(name: str, device: str = "auto", dtype: str = "auto", kind: str = "auto") -> "Generator":
    """A :class:`Generator` for ``name`` (hub id, local dir, GGUF file or offline copy).

    ``kind`` is ``causal``, ``seq2seq`` or ``auto`` (read from the model config).
    """
    if kind not in ("auto", "causal", "seq2seq"):
        raise ValueError(f"kind must be auto, causal or seq2seq, not {kind!r}")
    api = openai_backend.route(name)  # ``openai:NAME``, or any name under --api-base: a server's model
    if api is not None:
        from ..registry import BACKENDS

        return BACKENDS.build(api[0], model=api[1], kind=kind)
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
        self.context = _context_length(config, self.tokenizer)
        self.padded = padded_batches()
        self.info = {"model": resolved.name, "source": resolved.source, "device": device,
                     "dtype": str(torch_dtype).replace("torch.", ""), "kind": kind,
                     "batching": "padded" if self.padded else "per-item"}

    # -- prompting -------------------------------------------------------------------------------

    def chat_prompt(self, text: str) -> str:
        """``text`` as one user turn of the chat template, ready for the assistant's reply."""
        return self.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                  add_generation_prompt=True)

    def generate(self, prompts: list[str], max_new_tokens: int = 32, chat: bool | None = None,
                 stop: list[str] | None = None, batch_size: int | None = None) -> list[str]:
        """Greedy continuations of ``prompts`` (chat template applied when the model has one and
        ``chat`` is not False), cut at the first of ``stop``. Each prompt runs alone at its own
        length (padded batches of ``batch_size``, default ``self.batch_size``, longest first, with
        ``CQ_PADDED_BATCHES=1``);
        a prompt longer than the input limit loses its middle."""
        import torch

        use_chat = self.has_chat if chat is None else (chat and self.has_chat)
        texts = [self.chat_prompt(p) if use_chat else p for p in prompts]
        special = use_chat  # a chat template already contains the special tokens
        seqs = [self.tokenizer(t, add_special_tokens=not special, verbose=False).input_ids for t in texts]
        seqs = self._fit(seqs, _limit(self.context, max_new_tokens if self.kind == "causal" else 0))
        order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
        outputs: list[str] = [""] * len(texts)
        for idx in _groups(order, (batch_size or self.batch_size) if self.padded else 1):
            ids, mask = self._pad([seqs[i] for i in idx], left=self.kind == "causal")
            with torch.inference_mode():
                out = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                          max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                                          pad_token_id=self.tokenizer.pad_token_id)
            if self.kind == "causal":
                out = out[:, ids.shape[1]:]
            for i, row in zip(idx, out):
                outputs[i] = _cut(self.tokenizer.decode(row, skip_special_tokens=True), stop)
        return outputs

    def _fit(self, seqs: list[list[int]], budget: int) -> list[list[int]]:
        """Sequences cut to ``budget`` tokens (middle dropped), with one warning for the call."""
        cuts = [(len(s), budget) for s in seqs if len(s) > budget]
        _warn_cut(self.name, cuts, budget)
        return [cut_middle(s, budget) for s in seqs] if cuts else seqs

    def _pad(self, seqs: list[list[int]], left: bool, value: int | None = None):
        """(ids, attention mask) tensors; a single sequence gets no padding at all."""
        import torch

        pad = self.tokenizer.pad_token_id if value is None else value
        width = max(1, max(map(len, seqs)))
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            if not seq:
                continue
            cols = slice(width - len(seq), width) if left else slice(0, len(seq))
            ids[row, cols] = torch.tensor(seq, dtype=torch.long)
            mask[row, cols] = 1
        return ids, mask

    # -- scoring ---------------------------------------------------------------------------------

    def score(self, prompts: list[str], continuations: list[str], prefix: str = "",
              batch_size: int | None = None) -> list[float]:
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
            return self._score_seq2seq([prefix + p for p in prompts], continuations, batch_size)
        return self._score_causal(prompts, continuations, prefix, use_cache=True, batch_size=batch_size)

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False, verbose=False).input_ids if text else []

    def _score_causal(self, prompts, continuations, prefix: str, use_cache: bool = True,
                      batch_size: int | None = None) -> list[float]:
        import torch

        prefix_ids = self._bos + self._ids(prefix)
        items = [(self._ids(p), self._ids(c)) for p, c in zip(prompts, continuations)]
        limit, cuts = _limit(self.context), []
        for n, (p, c) in enumerate(items):  # the prompt gives way: prefix and continuation stay whole
            room = max(0, limit - len(prefix_ids) - len(c))
            if len(p) > room:
                cuts.append((len(prefix_ids) + len(p) + len(c), len(prefix_ids) + room + len(c)))
                items[n] = (cut_middle(p, room), c)
        _warn_cut(self.name, cuts, limit)
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
        offset = len(prefix_ids) if cache is not None else 0
        for idx in _groups(order, (batch_size or self.batch_size) if self.padded else 1):
            # right padding (if any): positions stay those of one sequence
            ids, mask = self._pad([head + items[i][0] + items[i][1] for i in idx], left=False)
            width = ids.shape[1]
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

    def _score_seq2seq(self, sources: list[str], targets: list[str], batch_size: int | None = None) -> list[float]:
        import torch

        src = self._fit([self.tokenizer(t, verbose=False).input_ids for t in sources], _limit(self.context))
        tgt = [self.tokenizer(text_target=t, verbose=False).input_ids for t in targets]
        scores = [0.0] * len(sources)
        order = sorted(range(len(src)), key=lambda i: -len(src[i]))
        for idx in _groups(order, (batch_size or self.batch_size) if self.padded else 1):
            ids, mask = self._pad([src[i] for i in idx], left=False)
            label_ids, _ = self._pad([tgt[i] for i in idx], left=False, value=-100)
            with torch.inference_mode():
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                    labels=label_ids.to(self.device)).logits
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
    """A BERT-style cross-encoder exported to ONNX, run with plain onnxruntime.

    Each pair runs alone at its own length: the INT8 copies quantise activations with one scale
    per call (DynamicQuantizeLinear over the whole input tensor), so batch mates and padding would
    change a pair's score. Measured on 2 CPU cores this is as fast as padded batches
    (docs/benchmarks/determinism.md)."""

    max_length = 512

    def __init__(self, resolved: ResolvedModel):
        from tokenizers import Tokenizer

        self.session = _onnx_session(os.path.join(resolved.path, "model.onnx"))
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
        self.padded = padded_batches()
        self.info = {"model": resolved.name, "source": resolved.source, "device": "cpu", "dtype": "int8-onnx",
                     "batching": "padded" if self.padded else "per-item"}

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]:
        import numpy as np

        limit = _limit(self.max_length)
        if limit != self._truncation:
            self.tokenizer.enable_truncation(limit)
            self._truncation = limit
        encodings = self.tokenizer.encode_batch([(q, p) for q, p in pairs])
        cuts = [(len(self._full.encode(*pairs[i]).ids), limit) for i, e in enumerate(encodings)
                if len(e.ids) >= limit and e.overflowing]
        _warn_cut(self.name, cuts, limit, self._warned)
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        scores = [0.0] * len(encodings)
        for idx in _groups(order, batch_size if self.padded else 1):
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

    def __init__(self, resolved: ResolvedModel, device: str):
        import torch
        from sentence_transformers import CrossEncoder

        try:
            self.model = CrossEncoder(resolved.path, device=device)
        except (OSError, ValueError) as err:
            raise ResourceError(f"cannot load {resolved.name} as a cross-encoder: {str(err).splitlines()[0]}") from None
        self._identity = torch.nn.Identity()
        self._context = self.model.max_seq_length or _context_length(self.model.config, self.model.tokenizer)
        self._warned: dict = {}
        self.name = resolved.name
        self.padded = padded_batches()
        self.info = {"model": resolved.name, "source": resolved.source, "device": device, "dtype": "float32",
                     "batching": "padded" if self.padded else "per-item"}

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]:
        if not pairs:
            return []
        limit = _limit(self._context)
        self.model.max_seq_length = limit
        # a pair can only be over the limit if it has more characters than the limit has tokens
        long = [p for p in pairs if len(p[0]) + len(p[1]) + 3 > limit]
        if long:
            tok = self.model.tokenizer
            lengths = [len(tok(q, p, verbose=False).input_ids) for q, p in long]
            _warn_cut(self.name, [(n, limit) for n in lengths if n > limit], limit, self._warned)
        scores = self.model.predict([list(p) for p in pairs], batch_size=batch_size if self.padded else 1,
                                    activation_fn=self._identity, show_progress_bar=False, convert_to_numpy=True)
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

        return SentenceEncoder(SentenceTransformer(resolved.path, device=dev))

    return _cached(("encoder", name, dev), build)


class SentenceEncoder:
    """A SentenceTransformer that encodes each text alone (no padding, so no batch dependence)
    unless ``CQ_PADDED_BATCHES=1``; everything else is the model's own."""

    def __init__(self, model):
        self.model = model
        self.padded = padded_batches()

    def encode(self, texts, batch_size: int = 32, **kwargs):
        return self.model.encode(texts, batch_size=batch_size if self.padded else 1, **kwargs)

    def __getattr__(self, name):
        if name == "model":  # not set yet (copy/pickle)
            raise AttributeError(name)
        return getattr(self.model, name)


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
        self.padded = padded_batches()

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


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (generation is greedy; this covers anything sampled)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
