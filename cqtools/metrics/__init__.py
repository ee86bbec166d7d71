"""Pure scoring functions, one module per family of metrics.

Every module computes a per-record score first (a plain function of the prediction and the
gold of one record) and aggregates separately, so ``cq score`` can stream records and keep
only the per-record numbers. Nothing here imports torch, starts a JVM or reads a record's
other keys; the few metrics that need a model or Java take a callable
(a tokenizer, a reader, a BERTScore function) from :mod:`cqtools.score`.

Modules: ``normalize`` (answer normalisation, string overlap, token F1, sentence splitting),
``bleu`` (corpus BLEU of the ``bleu`` metric, pycocoevalcap's sentence BLEU), ``detect``,
``cq``, ``cbqa``, ``ambigqa``, ``asqa``, ``clam`` and ``retrieval``. See docs/metrics.md.
"""
