"""REFUEL's LM verifier (``cq answer --verify --verifier-model DIR``): a Fusion-in-Decoder seq2seq model fine-tuned by
``cq train verifier`` (:mod:`cqtools.train.verifier`) to generate the answer of a disambiguated question from its
passages; a (question, answer) pair scores log p(answer + its EOS | question, passages), the sum over the answer's
tokens and its end (models/lm_filtering.py:32-59 of amzn/refuel-open-domain-qa @159090e, whose lm_score is the
negative). Without ``--verifier-model`` the reader verifies its own answers (cq's default, unchanged)."""
from __future__ import annotations

from ...models.scoring import summed_logprobs
from . import fid, seqgen

TASK = "verifier"


class FiDVerifier:
    """Scores answers with a `cq train verifier` model: each passage encoded with the question, the answer's
    tokens after its BOS and its EOS scored by the decoder over all of them."""

    def __init__(self, path: str, device: str, batch_size: int | None = None):
        from ...errors import InputError

        found = seqgen.trained_task(path)
        if found != TASK:
            what = f"a `cq train {found}` directory" if found else "not a `cq train` directory"
            raise InputError(f"--verifier-model {path} is {what}; it takes what `cq train verifier` writes (train one, "
                             f"or leave --verifier-model out: the reader verifies its own answers)")
        self.model, self.tokenizer, trained = seqgen.load_seqgen(path, device, TASK)
        self.fid, self.path, self.device = fid.fusion_in_decoder(self.model), path, str(self.model.device)
        self.n_passages = trained.get("passages") or fid.PASSAGES
        self.max_input = int(trained.get("max_passage_input_tokens") or fid.PASSAGE_INPUT_TOKENS)
        self.batch_size = batch_size or 8

    def verify_pairs(self, pairs: list[tuple[str, str]], passages: list[dict]) -> list[float]:
        """log p(answer + its end | question, passages) of each (question, answer) pair over the same passages."""
        import torch

        out: list[float] = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start:start + self.batch_size]
            rows = [fid.fid_inputs(self.tokenizer, q, passages, self.n_passages, self.max_input) for q, _ in chunk]
            ids, mask = fid.padded(rows, self.tokenizer.pad_token_id)
            lab = self.tokenizer(text_target=[a for _, a in chunk], padding=True, return_tensors="pt")
            labels = lab.input_ids.masked_fill(lab.attention_mask == 0, -100)
            scored = labels != -100
            if self.tokenizer.bos_token_id is not None and bool((labels[:, 0] == self.tokenizer.bos_token_id).all()):
                scored[:, 0] = False  # the BOS every target starts with is given, as the release's decoder input
            with torch.no_grad():
                logits = self.fid(ids.to(self.device), mask.to(self.device), labels=labels.to(self.device)).logits
            out += summed_logprobs(logits, labels, scored).tolist()
        return out

    def verify(self, question: str, passages: list[dict], answers: list[str], end: bool = True) -> list[float]:
        """The score of each answer of one question (always with its end: the verifier was trained to stop)."""
        return self.verify_pairs([(question, a) for a in answers], passages)


def verifier_for(path: str | None, verifying: bool, config, batch_size: int | None = None) -> FiDVerifier | None:
    """The verifier of ``--verifier-model`` (None without one: the reader verifies)."""
    if not path:
        return None
    if not verifying:
        from ...errors import InputError

        raise InputError(f"--verifier-model {path} scores answers when verifying: add --verify")
    from ...models.load import pick_device

    return FiDVerifier(path, pick_device(config.device), batch_size)
