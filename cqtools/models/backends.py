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

from . import openai_backend  # noqa: F401  registers "openai" in BACKENDS (cheap: no client import)
from .encoders import (HFCrossEncoder, OnnxCrossEncoder, OnnxEncoder, SentenceEncoder,  # noqa: F401
                       load_cross_encoder, load_encoder, load_transformers)
from .generator import Generator, load_generator  # noqa: F401
from .runtime import (_LOADED, DEFAULT_CONTEXT, _cached, cache_dir, cut_middle, max_input_tokens,  # noqa: F401
                      padded_batches, pick_device, pick_dtype, set_max_input_tokens, set_seed)
