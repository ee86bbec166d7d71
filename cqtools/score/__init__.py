"""`cq score`: one module per ``--task`` (detect, cq, cbqa, ambigqa, asqa, clam, retrieval, study), each
naming its factory in ``TASK``; :mod:`.builtin_methods` registers them in :data:`cqtools.registry.SCORE_TASKS`
through the plugin hooks, as a plugin registers its own.

:mod:`.base` holds what they share (:class:`ScoreOptions`, the :class:`Task` interface that a
plugin's task implements too, :func:`score_records`); :mod:`.rows` keeps each scored question's row
of numbers and evaluates the metrics a task declares over rows (the summary, ``--by`` groups,
resamples for :mod:`.ci`'s ``--ci`` and ``--paired``); the pure metric functions live in
:mod:`cqtools.metrics`. Models and Java are reached only through :mod:`.tokenizers` (PTB),
:mod:`.bertscore` and :mod:`.reader`, built on first use: importing this package imports no
torch, transformers or pyserini. :mod:`.plots` draws ``--plot``.
"""
from .base import DEFAULT_BERTSCORE_MODEL, Scored, ScoreOptions, Task, make_task, score_records  # noqa: F401
