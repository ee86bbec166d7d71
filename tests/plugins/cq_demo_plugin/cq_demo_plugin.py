"""A cq plugin: a question-length detector, a word-overlap searcher over the index's corpus, a
fixed-category CQ method, an "echo" model backend, a score task, a weight format ("reply-file") and a
trainer (`cq train majority`); four of them with options of their own (three as Option lists, the older way; the score task as an options dataclass)."""
import json
import os
import re
from dataclasses import dataclass

import click

from cqtools.plugins import hookimpl
from cqtools.registry import Option, option


class LengthDetector:
    """Long questions are ambiguous (a toy rule): score = number of words."""

    name = "length"

    def __init__(self, threshold, unit="word"):
        self.threshold = threshold
        self.unit = unit
        self.info = {"method": "length", "plugin": "cq-demo-plugin", "unit": unit}

    def score(self, records):
        return [float(len(r["question"].split() if self.unit == "word" else r["question"])) for r in records]


class FixedCQ:
    """Asks "Which <category>: first word, or last word?" of every question."""

    name = "fixed"

    def __init__(self, category):
        self.info = {"method": "fixed", "category": category}
        self.category = category

    def run(self, records):
        out = []
        for record in records:
            words = record["question"].rstrip("?").split()
            options = [words[0], words[-1]]
            out.append({"text": f"Which {self.category}: {options[0]}, or {options[1]}?", "category": self.category,
                        "options": options, "method": "fixed", "valid": True})
        return out


class EchoGenerator:
    """A model backend ("echo:NAME"): every generation is ``reply``; every continuation scores -1."""

    kind = "causal"

    def __init__(self, model, reply):
        self.name = f"echo:{model}"
        self.reply = reply
        self.info = {"model": self.name, "backend": "echo", "reply": reply}

    def chat_prompt(self, text):
        return text

    def generate(self, prompts, max_new_tokens=32, chat=None, stop=None, batch_size=None):
        return [self.reply for _ in prompts]

    def score(self, prompts, continuations, prefix="", batch_size=None):
        return [-1.0 for _ in prompts]


def reply_file(resolved, role, device, dtype, kind, config):
    """A weight format: a directory holding ``reply.txt`` is a "model" that always says that file's text."""
    if role != "generator":
        raise ValueError(f"a reply file is a generator, not a {role}")
    with open(os.path.join(resolved.path, "reply.txt")) as fh:
        return EchoGenerator(resolved.name, fh.read().strip())


reply_file.detect = lambda path: os.path.isfile(os.path.join(path, "reply.txt"))
reply_file.needs = ()


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
    register("length", lambda threshold, unit: LengthDetector(threshold, unit), help="more than 8 words",
             options=[Option("threshold", float, 8.0),
                      Option("unit", str, "word", "length in words or characters", choices=("word", "char"))])


@dataclass(frozen=True)
class LongQuestionsOptions:
    """share of long questions"""

    words: int = option(8, "a question longer than this many words is long", min=1)


def long_questions(options, config, opts):
    """A score task: the share of questions with more than ``options.words`` words (a toy metric). Its one
    option is declared once, above: `cq score` gets ``--words`` from it, as from cq's own tasks."""
    from cqtools.score.base import Scored, Task
    from cqtools.score.rows import mean, value

    class _Task(Task):
        columns = ("long",)  # one number per question; the summary, --ci, --paired and --by derive from it

        def score_record(self, record):
            return Scored({"id": record["id"], "long": float(len(record["question"].split()) > self.options.words)})

        def aggregation(self, rows):
            return [mean("long", "long"), value("words", self.options.words)]

    return _Task(opts, options)


@hookimpl
def register_score_tasks(register):
    register("long-questions", long_questions, options=LongQuestionsOptions)


@hookimpl
def register_cq_methods(register):
    register("fixed", lambda category: FixedCQ(category), help="the same kind of question for every record",
             options=[Option("category", str, "reading", "the CQ's category word")])


@hookimpl
def register_backends(register):
    register("echo", lambda model, reply, **_: EchoGenerator(model, reply), help="replies with --backend-opt reply",
             options=[Option("reply", str, "Which one: yes, or no?", "what every generation says")])


@click.command(name="majority")
@click.option("--train", "train_path", required=True, type=click.Path(dir_okay=False), help="Records (JSONL).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Directory to write the model to.")
def majority(train_path, out):
    """Learn the majority gold.ambiguous label (a toy trainer)."""
    with open(train_path) as fh:
        labels = [json.loads(line).get("gold", {}).get("ambiguous") for line in fh if line.strip()]
    ambiguous = sum(1 for label in labels if label) * 2 > len(labels)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "majority.json"), "w") as fh:
        json.dump({"ambiguous": ambiguous}, fh)
    click.echo(json.dumps({"out": out, "train_records": len(labels), "ambiguous": ambiguous}))


@hookimpl
def register_trainers(register):
    register("majority", majority, help="the majority gold.ambiguous label (a toy trainer)", options=[])


@hookimpl
def register_weight_formats(register):
    register("reply-file", reply_file, help="a directory with reply.txt: a generator that always says it", options=[])


@hookimpl
def register_searchers(register):
    register("overlap", lambda index_dir, **_: OverlapSearcher(index_dir), help="shared words")


@hookimpl
def register_presets(register):
    from cqtools.presets import Preset, Setting

    register(Preset(name="demo-length", help="the length detector as the demo plugin's (toy) paper ran it",
                    paper="none", code="tests/plugins/cq_demo_plugin",
                    settings=(Setting("detect", "method", "length", "the toy rule"),
                              Setting("detect", "threshold", 10.0, "questions of more than 10 words"))))
