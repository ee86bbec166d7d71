"""cq's own model backends, registered through the plugin hooks like any plugin's (cqtools/plugins.py).

A backend factory is called ``(model, kind, role, config)``: ``role`` is the model kind asked for
(generator, cross-encoder, encoder) and ``config`` the run configuration; ``factory.status(model)``
(optional) gives ``cq models`` its row without loading anything."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_backends(register):
    from .openai_backend import openai_generator

    register("openai", openai_generator, options=[],
             help="an OpenAI-compatible server (--model openai:NAME or --api-base URL; key from CQ_API_KEY or "
                  "OPENAI_API_KEY); language models only")
