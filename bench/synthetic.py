"""Synthetic passage corpora at any size, for the scale benchmarks (bench/corpus_scale.py).

Each passage's length (in whitespace-separated words) is drawn from the shared corpus's passage lengths,
and its words independently from the shared corpus's unigram distribution (words as they appear, case
and punctuation kept); its title is a real passage's title, at random. Seeded, so a size is the same file
on every machine with the same shared data. What this keeps: the term frequencies (so posting-list lengths
grow with the corpus as a real corpus's common terms do) and the passage lengths. What it loses: word
order and topics (quality numbers on it mean nothing), and the vocabulary stops at the shared corpus's
~59k words where a real corpus keeps adding rare terms (Heaps' law), so its term dictionary is smaller
than a real one of the same size; query cost is dominated by common terms, which it does model.

Written as JSONL ``{id, title, text}``, ids ``syn-N``, streamed in blocks (memory does not grow with size).
"""
from __future__ import annotations

import collections
import json
from pathlib import Path

BLOCK = 50_000


def statistics(real: Path) -> tuple[list[str], list[float], list[int], list[str]]:
    """(words, their probabilities, passage lengths, titles) of the shared corpus."""
    counts: collections.Counter = collections.Counter()
    lengths, titles = [], []
    with open(real) as fh:
        for line in fh:
            passage = json.loads(line)
            words = passage["text"].split()
            counts.update(words)
            lengths.append(len(words))
            titles.append(passage["title"])
    words = sorted(counts)  # a fixed order: the draw does not depend on dict order
    total = sum(counts.values())
    return words, [counts[w] / total for w in words], lengths, titles


def mean_words(real: Path) -> float:
    lengths = statistics(real)[2]
    return round(sum(lengths) / len(lengths), 1)


def write(real: Path, size: int, out: Path, seed: int = 13) -> dict:
    """Write ``size`` synthetic passages to ``out`` (via a temporary file, renamed when complete)."""
    import numpy as np
    import orjson

    words, probs, lengths, titles = statistics(real)
    vocab = np.array(words, dtype=object)
    rng = np.random.default_rng(seed)
    tmp = out.with_suffix(out.suffix + ".part")
    written = 0
    with open(tmp, "wb") as fh:
        while written < size:
            n = min(BLOCK, size - written)
            sizes = rng.choice(np.asarray(lengths), size=n)
            drawn = vocab[rng.choice(len(vocab), size=int(sizes.sum()), p=probs)]
            picked = rng.integers(0, len(titles), size=n)
            ends = np.cumsum(sizes)
            starts = ends - sizes
            fh.write(b"".join(orjson.dumps({"id": f"syn-{written + i}", "title": titles[picked[i]],
                                            "text": " ".join(drawn[starts[i]:ends[i]])}) + b"\n"
                              for i in range(n)))
            written += n
    tmp.rename(out)
    return {"passages": size, "vocabulary": len(words), "mean_words": round(float(np.mean(lengths)), 1),
            "seed": seed}
