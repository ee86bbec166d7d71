"""cq's own model backends, registered through the plugin hooks like any plugin's (cqtools/plugins.py).

A backend declares its options as a dataclass (its factory is called ``(options, config, model, kind, role)``;
``role`` is the model kind asked for: generator, cross-encoder, encoder) or as an Option list (called
``(model, kind, role, config, **options)``). An option's value comes from ``--backend-opt KEY=VALUE``, else its
flag (an option declared with ``flag=`` is a flag of every model command), else its environment variable, else
its default. ``factory.status(model)`` (optional) gives ``cq models`` its row without loading anything."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_backends(register):
    from .openai_backend import OpenAIOptions, openai_generator

    register("openai", openai_generator, options=OpenAIOptions)


@hookimpl
def register_weight_formats(register):
    from . import formats

    # Detection asks each format in this order; hf (transformers' own files) is what a path holding no other is.
    for name, factory in (("sentence-transformers", formats.sentence_transformers), ("onnx", formats.onnx),
                          ("gguf", formats.gguf), ("hf", formats.hf)):
        register(name, factory, help=" ".join((factory.__doc__ or "").split()), options=[])
