"""Continuation scoring of a local language model: summed log p(continuation | prefix + prompt), each input
alone at its own length (cqtools/models/__init__.py). The scoring half of
:class:`~cqtools.models.generator.LocalGenerator`, which loads the model and generates."""
from __future__ import annotations

import copy

from .batching import groups, shared_runs
from .cutting import fit, fit_prompts, input_limit
from . import usage


def cache_named(module, kwargs: dict) -> dict:
    """``kwargs`` with the KV cache (``past_key_values``) under the name ``module.forward`` takes: ``cache`` in
    transformers 5 (where ``past_key_values`` is deprecated, to go in 5.40), ``past_key_values`` before."""
    import inspect

    if "past_key_values" not in kwargs or "cache" not in inspect.signature(module.forward).parameters:
        return kwargs
    return {("cache" if k == "past_key_values" else k): v for k, v in kwargs.items()}


def summed_logprobs(logits, labels, scored=None):
    """Per row, the sum of log p(label) over the positions ``scored`` marks (default: every label that is not
    -100): a seq2seq target's log-likelihood from the logits of a forward pass given ``labels``."""
    import torch

    logprobs = torch.log_softmax(logits.float(), dim=-1)
    labels = labels.to(logprobs.device)
    keep = (labels != -100) if scored is None else scored.to(logprobs.device)
    return (logprobs.gather(-1, labels.clamp(min=0)[..., None])[..., 0] * keep).sum(-1)


def returned_cache(out):
    """The KV cache a forward pass returned (``cache`` in transformers 5, ``past_key_values`` before)."""
    cache = out.get("cache") if hasattr(out, "get") else None
    return cache if cache is not None else out.past_key_values


class ContinuationScoring:
    """``score`` for a loaded causal or seq2seq LM. The class it is mixed into holds the model and its
    tokenizer (``model``, ``tokenizer``, ``kind``, ``device``, ``name``), the input limit (``context``,
    ``input_cap``), the batching (``padded``, ``batch_size``), the causal model's BOS ids (``_bos``) and pads
    a group of sequences (``_pad(seqs, left, value=None)``)."""

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
        if usage.active():  # what the model reads of each pair (cqtools/models/usage.py)
            usage.add(calls=len(prompts), prompt_tokens=sum(len(self._ids(prefix + p)) + len(self._ids(c))
                                                            for p, c in zip(prompts, continuations)))
        with usage.timed():
            return self._score(prompts, continuations, prefix, batch_size)

    def _score(self, prompts, continuations, prefix: str, batch_size: int | None) -> list[float]:
        if self.kind == "seq2seq":
            return self._score_seq2seq([prefix + p for p in prompts], continuations, batch_size)
        return self._score_causal(prompts, continuations, prefix, use_cache=True, batch_size=batch_size)

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False, verbose=False).input_ids if text else []

    def _score_causal(self, prompts, continuations, prefix: str, use_cache: bool = True,
                      batch_size: int | None = None) -> list[float]:
        import torch

        prefix_ids = self._bos + self._ids(prefix)
        items = fit_prompts(self.name, input_limit(self.context, cap=self.input_cap), len(prefix_ids),
                            [(self._ids(p), self._ids(c)) for p, c in zip(prompts, continuations)])
        cache = last = None
        if use_cache and prefix and prefix_ids:
            with torch.inference_mode():
                out = self.model(torch.tensor([prefix_ids], device=self.device), use_cache=True)
            cache, last = returned_cache(out), torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        head = [] if cache is not None else prefix_ids
        if not head and any(not p and c for p, c in items) and cache is None:
            raise ValueError("cannot score a continuation with no context; pass a prompt or prefix")
        runs = shared_runs(items, self.padded)
        order = sorted(runs, key=lambda i: -sum(map(len, items[i])))
        scores = [0.0] * len(items)
        offset = len(prefix_ids) if cache is not None else 0
        for idx in groups(order, (batch_size or self.batch_size) if self.padded else 1):
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


    def _hidden(self, ids, mask, kwargs):
        """Last hidden states (the LM head is applied only where needed), or logits for models
        without a separate head."""
        base = getattr(self.model, "base_model", None)
        if base is not None and base is not self.model and self.model.get_output_embeddings() is not None:
            self._head = self.model.get_output_embeddings()
            return base(input_ids=ids, attention_mask=mask, **cache_named(base, kwargs)).last_hidden_state
        self._head = lambda x: x
        return self.model(input_ids=ids, attention_mask=mask, **cache_named(self.model, kwargs)).logits

    def _score_seq2seq(self, sources: list[str], targets: list[str], batch_size: int | None = None) -> list[float]:
        import torch

        src = fit(self.name, [self.tokenizer(t, verbose=False).input_ids for t in sources],
                  input_limit(self.context, cap=self.input_cap))
        tgt = [self.tokenizer(text_target=t, verbose=False).input_ids for t in targets]
        scores = [0.0] * len(sources)
        order = sorted(range(len(src)), key=lambda i: -len(src[i]))
        for idx in groups(order, (batch_size or self.batch_size) if self.padded else 1):
            ids, mask = self._pad([src[i] for i in idx], left=False)
            label_ids, _ = self._pad([tgt[i] for i in idx], left=False, value=-100)
            with torch.inference_mode():
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                    labels=label_ids.to(self.device)).logits
                sums = summed_logprobs(logits, label_ids)
            for row, i in enumerate(idx):
                scores[i] = float(sums[row])
        return scores

