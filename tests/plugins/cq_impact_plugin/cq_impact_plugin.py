"""A toy index part: an impact index (term -> [(passage id, impact)], the impact being the term's count in
the passage), built by `cq index --impact` into the index directory and listed in its manifest; then
`cq retrieve --method impact` searches it alone and `--method hybrid --parts impact,dense` fuses it with
another part. Its query encoder (how a question becomes weighted terms) is a search option of the part's own:
`cq retrieve --impact-encoder unique` (hybrid passes it to the impact side only). Everything else (the build directory and its swap, the manifest, the passage store, the
checks that the open parts are one build) is cq's."""
import json
import re
from collections import Counter
from dataclasses import dataclass

from cqtools.plugins import hookimpl
from cqtools.registry import option
from cqtools.retrieval.base import rank

FILE = "impact.json"


def terms(text):
    return re.findall(r"\w+", text.lower())


@dataclass(frozen=True)
class ImpactOptions:
    """term impacts (a toy): a passage scores the sum of its counts of the query's words"""

    impact: bool = option(False, "also build the toy impact index (term -> passages and counts)")


@dataclass(frozen=True)
class ImpactSearch:
    """how the impact part is searched"""

    impact_encoder: str = option("words", "the impact part's query encoder: words (each word of the question, as "
                                          "often as it occurs) or unique (each distinct word once)",
                                 choices=("words", "unique"))


class ImpactPart:
    searchable = True
    flag = "--impact"
    search_options = ImpactSearch

    def __init__(self, options, config):
        self.options = options

    def build(self, ctx):
        if not self.options.impact:
            return None
        postings = {}
        for passage in ctx.passages():
            for term, count in sorted(Counter(terms(passage["title"] + " " + passage["text"])).items()):
                postings.setdefault(term, []).append([passage["id"], count])
        with open(ctx.path(FILE), "w") as fh:
            json.dump({"generation": ctx.generation, "postings": postings}, fh)
        return {"impact": {"file": FILE, "terms": len(postings)}}

    def open(self, index, options):
        return ImpactSearcher(index.path(index.manifest["impact"]["file"]), index.passages(), options.impact_encoder)


class ImpactSearcher:
    def __init__(self, path, passages, encoder="words"):
        with open(path) as fh:
            data = json.load(fh)
        self.generation, self.postings, self.passages = data["generation"], data["postings"], passages
        self.encode = (lambda query: sorted(set(terms(query)))) if encoder == "unique" else terms
        self.params = {"part": "impact", "impact_encoder": encoder}

    def mixed(self):
        """Why this file and the index's passage store are of two builds (a swap mid-open), or None."""
        store = self.passages.docstore.meta().get("generation")
        return None if store == self.generation else f"the impact index is build {self.generation}, the store {store}"

    def search(self, query, k):
        return self.batch_search([query], ["q"], k)["q"]

    def batch_search(self, queries, ids, k, threads=1):
        scored = []
        for query in queries:
            scores = Counter()
            for term in self.encode(query):
                for passage, impact in self.postings.get(term, ()):
                    scores[passage] += impact
            scored.append(scores)
        docs = self.passages.docs(sorted({p for scores in scored for p in scores}))
        return {i: rank([{**docs[p], "score": float(s)} for p, s in scores.items()], k)
                for i, scores in zip(ids, scored)}


@hookimpl
def register_index_parts(register):
    register("impact", ImpactPart, options=ImpactOptions)
