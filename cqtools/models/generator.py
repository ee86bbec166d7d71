"""Local generators (causal LM, seq2seq; GGUF copies converted once: gguf.py): greedy generation and
continuation scoring, each input alone at its own length (cqtools/models/backends.py)."""
from __future__ import annotations

import copy
import logging
from typing import Sequence

from ..errors import ResourceError
from .gencache import open_cache
from .gguf import to_safetensors
from .resolve import ResolvedModel, resolve
from ..config import RunConfig, current
from .api import route
from .runtime import (_cached, _cut, _first_stop, _context_length, _groups, _limit, _warn_cut, cut_middle, input_device,
                      load_kwargs, pick_dtype, prompt_seeds, remote_code)

log = logging.getLogger("cqtools")


def load_generator(name: str, device: str = "auto", dtype: str = "auto", kind: str = "auto",
                   config: RunConfig | None = None) -> "LocalGenerator":
    """A :class:`LocalGenerator` for ``name`` (hub id, local dir, GGUF file or offline copy), built under
    ``config`` (default: the process's, :func:`cqtools.config.current`).

    ``kind`` is ``causal``, ``seq2seq`` or ``auto`` (read from the model config).
    """
    from .encoders import _load, build_backend

    if kind not in ("auto", "causal", "seq2seq"):
        raise ValueError(f"kind must be auto, causal or seq2seq, not {kind!r}")
    config = config if config is not None else current()  # the loaders' edge: a Python caller may pass none
    api = route(name, config=config)  # ``openai:NAME``, or any name under --api-base: a server's model
    if api is not None:
        return build_backend(api[0], api[1], kind, "generator", config)
    return _load(name, "generator", device, config, dtype, kind)


class LocalGenerator:
    """Greedy generation and continuation scoring with one call shape for causal and seq2seq LMs."""

    def __init__(self, resolved: ResolvedModel, run: RunConfig, device: str, dtype: str = "auto", kind: str = "auto",
                 batch_size: int | None = None):
        """``resolved`` loaded under the run configuration ``run`` (its loading fields, input cap and
        batching; kept as ``self.run``)."""
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        path = to_safetensors(resolved, run.cache_root()) if resolved.fmt == "gguf" else resolved.path
        remote = remote_code(run)
        self.run = run
        try:
            config = AutoConfig.from_pretrained(path, **remote)
        except ValueError as err:  # e.g. an architecture that needs --trust-remote-code
            raise ResourceError(f"cannot read {resolved.name}'s config: {str(err).splitlines()[0]}") from None
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
        self.context = _context_length(config, self.tokenizer)
        self.padded = run.padded_batches
        self.input_cap = run.max_input_tokens  # --max-input-tokens of the configuration that built it
        placement = getattr(self.model, "hf_device_map", None)
        self.info = {"model": resolved.name, "source": resolved.source, "device": device,
                     "dtype": str(torch_dtype).replace("torch.", ""), "kind": kind,
                     "batching": "padded" if self.padded else "per-item"}
        if run.quantize:
            self.info["quantize"] = run.quantize
        if run.trust_remote_code:
            self.info["trust_remote_code"] = True
        if run.max_input_tokens is not None:  # prompts cut to it: part of what decides the text
            self.info["max_input_tokens"] = run.max_input_tokens
        if placement and len(set(map(str, placement.values()))) > 1:
            self.info["device"] = "device_map=auto (" + ", ".join(sorted(set(map(str, placement.values())))) + ")"
        if resolved.revision:
            self.info["revision"] = resolved.revision
        self.cache = open_cache(resolved.name, path, self.info, run)  # $CQ_GEN_CACHE (opt-in): gencache.py

    # -- prompting -------------------------------------------------------------------------------

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
        import torch

        use_chat = self.has_chat if chat is None else (chat and self.has_chat)
        texts = [self.chat_prompt(p) if use_chat else p for p in prompts]
        special = use_chat  # a chat template already contains the special tokens
        seqs = [self.tokenizer(t, add_special_tokens=not special, verbose=False).input_ids for t in texts]
        seqs = self._fit(seqs, _limit(self.context, max_new_tokens if self.kind == "causal" else 0, self.input_cap))
        sampling = temperature > 0
        seeds = prompt_seeds(seed, prompts) if sampling else [None] * len(seqs)
        alone = not self.padded or sampling
        outputs: list[str] = [""] * len(texts)
        first: dict[tuple, int] = {}  # each distinct prompt runs once when prompts run alone (the same output)
        same = [first.setdefault((tuple(s), k), i) for i, (s, k) in enumerate(zip(seqs, seeds))] if alone \
            else list(range(len(seqs)))
        order = sorted((i for i in range(len(seqs)) if same[i] == i), key=lambda i: -len(seqs[i]))
        keys: dict[int, str] = {}
        decoding = {"temperature": temperature, "top_p": top_p} if sampling else {}
        if num_beams > 1:
            decoding["num_beams"] = num_beams
        if self.cache is not None:  # each input alone only: a prompt's text does not depend on the others
            keys = {i: self.cache.key(seqs[i], max_new_tokens, stop, {**decoding, "seed": seeds[i]} if sampling
                                      else decoding or None) for i in order}
            found = self.cache.get(list(keys.values()))
            for i in order:
                if keys[i] in found:
                    outputs[i] = found[keys[i]]
            order = [i for i in order if keys[i] not in found]
        sample = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0} if sampling \
            else {"do_sample": False}
        for idx in _groups(order, 1 if alone else (batch_size or self.batch_size)):
            ids, mask = self._pad([seqs[i] for i in idx], left=self.kind == "causal")
            start = ids.shape[1] if self.kind == "causal" else 0
            if sampling:
                torch.manual_seed(seeds[idx[0]])
            with torch.inference_mode():
                out = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                          max_new_tokens=max_new_tokens, num_beams=num_beams, **sample,
                                          pad_token_id=self.pad_id,
                                          stopping_criteria=_stop_criteria(self.tokenizer, stop, start))
            out = out[:, start:]
            for i, row in zip(idx, out):
                outputs[i] = _cut(self.tokenizer.decode(row, skip_special_tokens=True), stop)
                if keys:
                    self.cache.put(keys[i], outputs[i])
        return [outputs[i] for i in same]

    def _fit(self, seqs: list[list[int]], budget: int) -> list[list[int]]:
        """Sequences cut to ``budget`` tokens (middle dropped), with one warning for the call."""
        cuts = [(len(s), budget) for s in seqs if len(s) > budget]
        _warn_cut(self.name, cuts, budget)
        return [cut_middle(s, budget) for s in seqs] if cuts else seqs

    def _pad(self, seqs: list[list[int]], left: bool, value: int | None = None):
        """(ids, attention mask) tensors; a single sequence gets no padding at all."""
        import torch

        pad = self.pad_id if value is None else value
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
        items = self._fit_prompts(len(prefix_ids), [(self._ids(p), self._ids(c))
                                                    for p, c in zip(prompts, continuations)])
        cache = last = None
        if use_cache and prefix and prefix_ids:
            with torch.inference_mode():
                out = self.model(torch.tensor([prefix_ids], device=self.device), use_cache=True)
            cache, last = out.past_key_values, torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        head = [] if cache is not None else prefix_ids
        if not head and any(not p and c for p, c in items) and cache is None:
            raise ValueError("cannot score a continuation with no context; pass a prompt or prefix")
        runs = self._shared_runs(items)
        order = sorted(runs, key=lambda i: -sum(map(len, items[i])))
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
                for row, i in ((row, i) for row, run in enumerate(idx) for i in runs[run]):
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

    def _fit_prompts(self, prefix_len: int, items: list[tuple[list[int], list[int]]]) -> list:
        """(prompt, continuation) token lists fitted to the input limit after a ``prefix_len``-token
        prefix: the prompt gives way (middle dropped), prefix and continuation stay whole; one warning
        for the call."""
        limit, cuts = _limit(self.context, cap=self.input_cap), []
        for n, (p, c) in enumerate(items):
            room = max(0, limit - prefix_len - len(c))
            if len(p) > room:
                cuts.append((prefix_len + len(p) + len(c), prefix_len + room + len(c)))
                items[n] = (cut_middle(p, room), c)
        _warn_cut(self.name, cuts, limit)
        return items

    def _shared_runs(self, items: list[tuple[list[int], list[int]]]) -> dict[int, list[int]]:
        """{item that runs: the items its forward pass scores}. Items that share a prompt and continue it
        by one token read one forward pass (each input alone only, like generate's dedupe): the last
        prompt position predicts all their tokens, and causal attention keeps it blind to the token
        that follows (True/False verifications: half the passes)."""
        runs: dict[int, list[int]] = {}
        first_of: dict[tuple, int] = {}
        for i, (p, c) in enumerate(items):
            shared = not self.padded and len(c) == 1 and bool(p)
            runs.setdefault(first_of.setdefault(tuple(p), i) if shared else i, []).append(i)
        return runs

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

        src = self._fit([self.tokenizer(t, verbose=False).input_ids for t in sources], _limit(self.context, cap=self.input_cap))
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
    decoded as :func:`_cut` sees them) settles where :func:`_cut` cuts: a stop string found at p, and
    text up to p + (longest stop - 1), so no stop string starting before p can still complete.
    None without stop strings."""
    stop = [s for s in stop or () if s]
    if not stop:
        return None
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    longest = max(map(len, stop))

    def settled(text: str) -> bool:
        pos = _first_stop(text, stop)
        return pos is not None and len(text) >= pos + longest - 1

    class StopInText(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            texts = tokenizer.batch_decode(input_ids[:, start:], skip_special_tokens=True)
            return torch.tensor([settled(t) for t in texts], dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([StopInText()])
