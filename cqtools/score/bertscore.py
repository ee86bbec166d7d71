"""BERTScore F1 of the ``cq`` task, through the ``bert-score`` package; the model is resolved by
cqtools.models and loaded on first use (nothing heavy is imported with this module)."""
from __future__ import annotations

import logging

from ..errors import ResourceError

log = logging.getLogger("cqtools")


class BertScore:
    """BERTScore F1 with the ``bert-score`` package, the model resolved by cqtools.models.

    Layer: bert-score's recommended layer for known models (roberta-large: 17), else the
    model's last layer. A model that cannot be loaded is an error when the user named it
    (``required``), otherwise ``error`` says why and the metric is reported as null.
    """

    def __init__(self, name: str, device: str, batch_size: int, required: bool = False, config=None):
        """``config``: the run configuration the model resolves under (None: the process's)."""
        self.name, self.device, self.batch_size, self.required = name, device, batch_size, required
        self.config = config
        self.scorer = None
        self.layers: int | None = None
        self.error: str | None = None

    def describe(self) -> str:
        return f"{self.name} (layer {self.layers})" if self.layers else self.name

    def _load(self):
        from ..models import resolve
        from ..models.load import pick_device

        try:
            import bert_score
            from bert_score.utils import model2layers
        except ImportError as err:
            raise ResourceError("BERTScore needs the bert-score package (pip install bert-score==0.3.13), "
                                "or pass --no-bertscore") from err
        resolved = resolve(self.name, config=self.config)
        layers = model2layers.get(self.name)
        if layers is None:
            from transformers import AutoConfig

            layers = AutoConfig.from_pretrained(resolved.path).num_hidden_layers
        self.layers = layers
        log.info("bertscore: %s, layer %d", resolved.describe(), layers)
        self.scorer = bert_score.BERTScorer(model_type=resolved.path, num_layers=layers,
                                            device=pick_device(self.device), batch_size=self.batch_size)

    def f1(self, preds: list[str | None], golds: list[str]) -> list[float] | None:
        """F1 per pair; None when the model is unavailable.

        A missing (None) or empty prediction scores 0 without reaching bert-score: 0 is what
        bert-score gives an empty candidate, and under transformers 5 it crashes on one instead
        (``build_inputs_with_special_tokens`` is gone).
        """
        if self.error:
            return None
        if self.scorer is None:
            try:
                self._load()
            except ResourceError as err:
                if self.required:
                    raise
                # said once, in the summary's notes (the task adds self.error there); bertscore_f1 is null
                self.error = (f"skipped: {self.name} cannot be loaded offline; pass --bertscore-model "
                              f"sentence-transformers/all-MiniLM-L6-v2 (offline), a local model, or --no-bertscore")
                log.debug("bertscore: %s: %s", self.name, err.message)
                return None
        todo = [i for i, p in enumerate(preds) if p is not None and p.strip() and golds[i].strip()]
        values = [0.0] * len(preds)
        if todo:
            _, _, f = self.scorer.score([preds[i] for i in todo], [golds[i] for i in todo])
            for i, value in zip(todo, f.tolist()):
                values[i] = float(value)
        return values
