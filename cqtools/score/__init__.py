"""`cq score`: one module per ``--task`` (detect, cq, cbqa, ambigqa, asqa, clam, retrieval), each
registering its factory in :data:`cqtools.registry.SCORE_TASKS` when imported.

:mod:`.base` holds what they share (:class:`ScoreOptions`, the :class:`Task` interface that a
plugin's task implements too, :func:`score_records`); the pure metric functions live in
:mod:`cqtools.metrics`. Models and Java are reached only through :mod:`.tokenizers` (PTB),
:mod:`.bertscore` and :mod:`.reader`, built on first use: importing this package imports no
torch, transformers or pyserini. :mod:`.plots` draws ``--plot``.
"""
# Importing a task module registers it; this order is the order of `cq score --task`'s choices.
from . import detect, cq, cbqa, ambigqa, asqa, clam, retrieval  # noqa: F401,I001  # isort: skip
from . import study  # noqa: F401,I001  # isort: skip
from .base import DEFAULT_BERTSCORE_MODEL, ScoreOptions, Task, make_task, score_records  # noqa: F401
