"""What ``cq train reader`` adds to distant supervision (:mod:`.span_reader`): DPR's passage-selection loss
(``--selection-head``), and the held-out answers no training span may be (``--dev`` and ``--unseen``)."""
from __future__ import annotations

from ..records import PASSAGES


def held_answers(records: list[dict], n_passages: int, aliases_of) -> dict[str, set[str]]:
    """Passage id -> the normalised gold aliases (``aliases_of(record)``) of each held-out record whose top
    ``n_passages`` passages hold it: what no training span may be (a training question that reads a held-out question's own passage and
    targets that question's answer there learns the held-out answer)."""
    from ..metrics.normalize import normalize_answer

    out: dict[str, set[str]] = {}
    for record in records:
        aliases = {normalize_answer(a) for a in aliases_of(record)} - {""}
        for passage in (record.get(PASSAGES) or [])[:n_passages]:
            out.setdefault(str(passage.get("id")), set()).update(aliases)
    return out


def selection_loss(scores, positives: list[list[bool]]):
    """DPR's selection loss: per question, -log of the softmax mass its passages holding an answer take of
    all its passages' ``scores`` (flat, questions in order); questions without a negative teach nothing."""
    import torch

    losses, at = [], 0
    for flags in positives:
        row = scores[at:at + len(flags)]
        at += len(flags)
        if all(flags):
            continue
        mask = torch.tensor(flags, device=scores.device)
        losses.append(torch.logsumexp(row, 0) - torch.logsumexp(row[mask], 0))
    return torch.stack(losses).mean() if losses else scores.sum() * 0.0


def loss_function(selection_head: bool, tokenizer, model, units: list, device: str):
    """One batch's loss: the span loss of every passage in it, plus with ``selection_head`` (--selection-head: ``units`` are then
    questions, each a list of its passages) the selection loss of each question's passages."""
    import torch

    def loss_of(net, idx: list[int]):
        chosen = [units[i] for i in idx]
        flat = [e for group in chosen for e in group] if selection_head else chosen
        batch = tokenizer.pad([e[0] for e in flat], return_tensors="pt").to(device)
        starts = torch.tensor([e[1][0] for e in flat], device=device)
        ends = torch.tensor([e[1][1] for e in flat], device=device)
        out = net(**batch, start_positions=starts, end_positions=ends, output_hidden_states=selection_head)
        if not selection_head:
            return out.loss
        return out.loss + selection_loss(model.cq_selection(out.hidden_states[-1][:, 0]).squeeze(-1),
                                         [[e[1] != (0, 0) for e in group] for group in chosen])

    return loss_of
