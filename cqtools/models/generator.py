"""Local generators (causal LM, seq2seq; GGUF copies converted once: gguf.py): greedy generation here, continuation
scoring in cqtools/models/scoring.py, each input alone at its own length (cqtools/models/__init__.py). What a call
cuts (inputs over the limit, text after a stop string) is cqtools/models/cutting.py; how it groups its inputs,
cqtools/models/batching.py; cqtools/models/load.py loads a generator."""
from __future__ import annotations

import logging
from typing import Sequence

from ..config import RunConfig
from ..errors import ResourceError
from .batching import distinct_longest_first, groups, pad
from .cutting import context_length, cut_at_stop, first_stop, fit, input_limit
from .gencache import open_cache
from .gguf import to_safetensors
from .resolve import ResolvedModel
from .runtime import input_device, load_kwargs, pick_dtype, prompt_seeds, remote_code
from .scoring import ContinuationScoring
from . import usage

log = logging.getLogger("cqtools")


class LocalGenerator(ContinuationScoring):
    """Greedy generation and continuation scoring with one call shape for causal and seq2seq LMs."""

    def __init__(self, resolved: ResolvedModel, run: RunConfig, device: str, dtype: str = "auto", kind: str = "auto",
                 batch_size: int | None = None):
        """``resolved`` loaded under the run configuration ``run`` (its loading fields, input cap and
        batching; kept as ``self.run``)."""
        from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        path = to_safetensors(resolved, run.cache_root()) if resolved.fmt == "gguf" else resolved.path
        remote = remote_code(run)
        self.run = run
        config = _model_config(resolved.name, path, remote)
        if kind == "auto":
            kind = "seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal"
        self.kind = kind
        self.name = resolved.name
        # items per padded forward pass when a call names none: --model-batch-size of the configuration
        # that built it (each input runs alone unless CQ_PADDED_BATCHES=1)
        self.batch_size = batch_size or run.model_batch_size
        torch_dtype = pick_dtype(dtype, device)
        self.tokenizer = AutoTokenizer.from_pretrained(path, **remote)
        cls = AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForCausalLM
        kwargs, move = load_kwargs(path, device, torch_dtype, run)
        try:
            model = cls.from_pretrained(path, **kwargs)
        except (ValueError, OSError) as err:
            raise ResourceError(f"cannot load {resolved.name} as a {kind} LM: {str(err).splitlines()[0]}") from None
        self.model = (model.to(device) if move else model).eval()
        self.device = input_device(self.model, device)
        self.pad_id = _pad_token(self.tokenizer, config)
        self.tokenizer.padding_side = "left" if kind == "causal" else "right"
        self.has_chat = kind == "causal" and bool(getattr(self.tokenizer, "chat_template", None))
        probe = self.tokenizer("x").input_ids
        bos = self.tokenizer.bos_token_id
        self._bos = [bos] if kind == "causal" and bos is not None and probe and probe[0] == bos else []
        self.context = context_length(config, self.tokenizer)
        self.padded = run.padded_batches
        self.input_cap = run.max_input_tokens  # --max-input-tokens of the configuration that built it
        self.info = _describe(resolved, run, device, torch_dtype, kind, self.model)
        self.cache = open_cache(resolved.name, path, self.info, run)  # $CQ_GEN_CACHE (opt-in): gencache.py

    def chat_prompt(self, text: str) -> str:
        """``text`` as one user turn of the chat template, ready for the assistant's reply."""
        return self.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                  add_generation_prompt=True)

    def generate(self, prompts: list[str], max_new_tokens: int = 32, chat: bool | None = None,
                 stop: list[str] | None = None, batch_size: int | None = None, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | Sequence[int] | None = None, num_beams: int = 1) -> list[str]:
        """Greedy continuations of ``prompts`` (chat template applied when the model has one and
        ``chat`` is not False), cut at the first of ``stop``; a row stops generating once that cut
        is settled (:func:`_stop_criteria`; greedy tokens never depend on later ones, so the cut
        text is that of the full-length run). Each prompt runs alone at its own
        length (padded batches of ``batch_size``, default ``self.batch_size``, longest first, with
        ``CQ_PADDED_BATCHES=1``);
        a prompt longer than the input limit loses its middle. ``temperature`` above 0 samples
        (``top_p``, no top-k cut), each prompt alone with torch seeded by
        :func:`~cqtools.models.runtime.prompt_seed` of ``seed`` and its text. ``num_beams`` above 1
        searches that many beams (Hugging Face's beam search, no sampling; the best beam is returned)."""
        with usage.timed():
            return self._generate(prompts, max_new_tokens, chat, stop, batch_size, temperature, top_p, seed, num_beams)

    def _generate(self, prompts, max_new_tokens, chat, stop, batch_size, temperature, top_p, seed,
                  num_beams) -> list[str]:
        use_chat = self.has_chat if chat is None else (chat and self.has_chat)
        texts = [self.chat_prompt(p) if use_chat else p for p in prompts]
        special = use_chat  # a chat template already contains the special tokens
        seqs = [self.tokenizer(t, add_special_tokens=not special, verbose=False).input_ids for t in texts]
        seqs = fit(self.name, seqs, input_limit(self.context, max_new_tokens if self.kind == "causal" else 0,
                                                self.input_cap))
        sampling = temperature > 0
        seeds = prompt_seeds(seed, prompts) if sampling else [None] * len(seqs)
        alone = not self.padded or sampling
        outputs: list[str] = [""] * len(texts)
        # each distinct prompt runs once when prompts run alone (the same output)
        same, order = distinct_longest_first(seqs, seeds, alone)
        decoding = {"temperature": temperature, "top_p": top_p} if sampling else {}
        if num_beams > 1:
            decoding["num_beams"] = num_beams
        keys: dict[int, str] = {}
        if self.cache is not None:  # each input alone only: a prompt's text does not depend on the others
            keys = {i: self.cache.key(seqs[i], max_new_tokens, stop, {**decoding, "seed": seeds[i]} if sampling
                                      else decoding or None) for i in order}
            order = self._from_cache(keys, order, outputs)
        made: dict[int, int] = {}  # generated tokens of each input that ran (usage.py)
        for idx in groups(order, 1 if alone else (batch_size or self.batch_size)):
            done = self._generate_group([seqs[i] for i in idx], seeds[idx[0]] if sampling else None, max_new_tokens,
                                        stop, temperature, top_p, num_beams)
            for i, (text, tokens) in zip(idx, done):
                outputs[i], made[i] = text, tokens
                if keys:
                    self.cache.put(keys[i], outputs[i])
        if usage.active():
            usage.add(calls=len(seqs), prompt_tokens=sum(map(len, seqs)),
                      generated_tokens=sum(made[i] if i in made else len(self.tokenizer(
                          outputs[i], add_special_tokens=False, verbose=False).input_ids) for i in same))
        return [outputs[i] for i in same]

    def _from_cache(self, keys: dict[int, str], order: list[int], outputs: list[str]) -> list[int]:
        """The generations the cache holds put in ``outputs``; the inputs of ``order`` still to run."""
        found = self.cache.get(list(keys.values()))
        for i in order:
            if keys[i] in found:
                outputs[i] = found[keys[i]]
        return [i for i in order if keys[i] not in found]

    def _generate_group(self, seqs: list[list[int]], seed: int | None, max_new_tokens: int, stop, temperature: float,
                        top_p: float, num_beams: int) -> list[tuple[str, int]]:
        """One call of the model's ``generate`` on a group of inputs (one alone, or a padded batch): each
        output cut at its first stop string, with the tokens generated (up to the first end or padding token);
        ``seed`` (sampling only) seeds torch first."""
        import torch

        sample = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0} if temperature > 0 \
            else {"do_sample": False}
        ids, mask = self._pad(seqs, left=self.kind == "causal")
        start = ids.shape[1] if self.kind == "causal" else 0
        if temperature > 0:
            torch.manual_seed(seed)
        with torch.inference_mode():
            out = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                      max_new_tokens=max_new_tokens, num_beams=num_beams, **sample,
                                      pad_token_id=self.pad_id,
                                      stopping_criteria=_stop_criteria(self.tokenizer, stop, start))
        out = out[:, start:]
        return [(cut_at_stop(self.tokenizer.decode(row, skip_special_tokens=True), stop),
                 _generated(row.tolist(), _eos_ids(self.model), self.pad_id, self.kind == "seq2seq")) for row in out]

    def _pad(self, seqs: list[list[int]], left: bool, value: int | None = None):
        """(ids, attention mask) tensors, padded with ``value`` (default: the pad token); a single sequence gets
        no padding at all."""
        return pad(seqs, left, self.pad_id if value is None else value)


def _eos_ids(model) -> set:
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    return {e for e in (eos if isinstance(eos, (list, tuple)) else [eos]) if isinstance(e, int)}


def _generated(row: list[int], eos: set, pad: int, seq2seq: bool) -> int:
    """Tokens a model generated in ``row`` (its output after the input): up to and with the first end-of-sequence
    token, else up to the first padding (a padded batch's row that stopped early); a seq2seq row's first token is
    the decoder's start, not generated."""
    row = row[1:] if seq2seq else row
    for n, token in enumerate(row):
        if token in eos:
            return n + 1
        if token == pad:
            return n
    return len(row)


def _model_config(name: str, path: str, remote: dict):
    """transformers' config of the model at ``path``; a one-line error when it cannot be read."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(path, **remote)
    except ValueError as err:  # e.g. an architecture that needs --trust-remote-code
        raise ResourceError(f"cannot read {name}'s config: {str(err).splitlines()[0]}") from None


def _describe(resolved: ResolvedModel, run: RunConfig, device: str, torch_dtype, kind: str, model) -> dict:
    """A loaded generator's ``info``: what decides its text (written into each record's meta)."""
    placement = getattr(model, "hf_device_map", None)
    info = {"model": resolved.name, "source": resolved.source, "device": device,
            "dtype": str(torch_dtype).replace("torch.", ""), "kind": kind,
            "batching": "padded" if run.padded_batches else "per-item"}
    if run.quantize:
        info["quantize"] = run.quantize
    if run.trust_remote_code:
        info["trust_remote_code"] = True
    if run.max_input_tokens is not None:  # prompts cut to it: part of what decides the text
        info["max_input_tokens"] = run.max_input_tokens
    if placement and len(set(map(str, placement.values()))) > 1:
        info["device"] = "device_map=auto (" + ", ".join(sorted(set(map(str, placement.values())))) + ")"
    if resolved.revision:
        info["revision"] = resolved.revision
    return info


def _pad_token(tokenizer, config) -> int:
    """The id padding uses (always masked out): the tokenizer's pad token, else its eos token (then set
    as the tokenizer's pad token), else the config's pad or eos id, else 0."""
    if tokenizer.pad_token_id is not None:
        return tokenizer.pad_token_id
    if tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
        return tokenizer.pad_token_id
    for key in ("pad_token_id", "eos_token_id"):
        value = getattr(config, key, None)
        value = value[0] if isinstance(value, (list, tuple)) and value else value
        if isinstance(value, int):
            return value
    return 0


def _stop_criteria(tokenizer, stop: Sequence[str] | None, start: int):
    """A stopping criterion that ends each row once the text it generated (tokens from ``start``,
    decoded as :func:`~cqtools.models.cutting.cut_at_stop` sees them) settles where it cuts: a stop string found at
    p, and text up to p + (longest stop - 1), so no stop string starting before p can still complete.
    None without stop strings."""
    stop = [s for s in stop or () if s]
    if not stop:
        return None
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    longest = max(map(len, stop))

    def settled(text: str) -> bool:
        pos = first_stop(text, stop)
        return pos is not None and len(text) >= pos + longest - 1

    class StopInText(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            texts = tokenizer.batch_decode(input_ids[:, start:], skip_special_tokens=True)
            return torch.tensor([settled(t) for t in texts], dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([StopInText()])
