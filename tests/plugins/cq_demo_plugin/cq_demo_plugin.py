"""A cq plugin: a question-length detector and a word-overlap searcher over the index's corpus."""
import json
import os
import re

from cqtools.plugins import hookimpl


class LengthDetector:
    """Long questions are ambiguous (a toy rule): score = number of words."""

    name = "length"

    def __init__(self, threshold):
        self.threshold = threshold
        self.info = {"method": "length", "plugin": "cq-demo-plugin"}

    def score(self, records):
        return [float(len(r["question"].split())) for r in records]


def _words(text):
    return set(re.findall(r"\w+", text.lower()))


class OverlapSearcher:
    """Passages ranked by the number of words they share with the query (ties by id)."""

    def __init__(self, index_dir):
        with open(os.path.join(index_dir, "cq_index.json")) as fh:
            corpus = json.load(fh)["corpus"]
        with open(corpus) as fh:
            self.passages = [json.loads(line) for line in fh if line.strip()]
        self.params = {"plugin": "cq-demo-plugin"}

    def search(self, query, k):
        words = _words(query)
        scored = [(len(words & _words(p["title"] + " " + p["text"])), p) for p in self.passages]
        scored.sort(key=lambda sp: (-sp[0], sp[1]["id"]))
        return [{"id": p["id"], "title": p["title"], "text": p["text"], "score": float(s), "rank": n}
                for n, (s, p) in enumerate(scored[:k], start=1)]

    def batch_search(self, queries, ids, k, threads):
        return {qid: self.search(q, k) for q, qid in zip(queries, ids)}


@hookimpl
def register_detectors(register):
    register("length", lambda threshold: LengthDetector(threshold), help="more than 8 words",
             defaults={"threshold": 8})


@hookimpl
def register_searchers(register):
    register("overlap", lambda index_dir, **_: OverlapSearcher(index_dir), help="shared words")
