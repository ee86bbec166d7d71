"""`cq disambiguate --method toc`: Tree of Clarifications as its released code runs it
(gankim/tree-of-clarifications @75a3ddd; docs/audit/toc-clam.md §1, docs/methods-toc.md), and the
sampling it needs in every generator."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import FIXTURES
from .fakes import FakeCrossEncoder, FakeEncoder, FakeGenerator

# --- sampling in the generators -------------------------------------------------------------------


def test_local_sampling_is_seeded_per_prompt_and_batch_free(tiny_causal, monkeypatch):
    from cqtools.models import load_generator

    gen = load_generator(tiny_causal, "cpu")
    prompts = ["a question about ships", "another prompt", "a question about ships"]
    greedy = gen.generate(prompts, max_new_tokens=8)
    one = gen.generate(prompts, max_new_tokens=8, temperature=0.7, seed=3)
    again = [gen.generate([p], max_new_tokens=8, temperature=0.7, seed=3)[0] for p in reversed(prompts)][::-1]
    assert one == again and one[0] == one[2]  # same prompt, same seed: same text, in any batch
    other = gen.generate(prompts, max_new_tokens=8, temperature=0.7, seed=4)
    assert other != one  # another seed samples other text
    assert gen.generate(prompts, max_new_tokens=8) == greedy  # temperature 0 stays greedy
    monkeypatch.setattr(gen, "padded", True)  # padded batching never applies to sampled prompts
    assert gen.generate(prompts, max_new_tokens=8, temperature=0.7, seed=3, batch_size=3) == one


def test_per_prompt_seeds_and_the_fake_records_decoding():
    from cqtools.models.runtime import prompt_seed, prompt_seeds

    assert prompt_seed(1, "x") == prompt_seed(1, "x") != prompt_seed(2, "x")
    assert prompt_seeds([1, 2], ["x", "x"]) == [prompt_seed(1, "x"), prompt_seed(2, "x")]
    with pytest.raises(ValueError):
        prompt_seeds([1], ["x", "y"])
    fake = FakeGenerator("ok")
    fake.generate(["p"], max_new_tokens=5, temperature=0.7, top_p=1.0, seed=[9])
    assert fake.log == [{"prompt": "p", "max_new_tokens": 5, "stop": None, "temperature": 0.7, "top_p": 1.0,
                         "seed": 9}]


# --- replaying the released traces (fixtures/released/toc/) ---------------------------------------

TRACES = FIXTURES / "released" / "toc"
RUNS = {"A_varrow_verify": ("dA", True), "B_sunvale_verify_stall": ("dB", True), "C_pellham_noverify": ("dC", False)}


def _json(path):
    return json.loads(Path(path).read_text())


TOY, SCENES = _json(TRACES / "inputs" / "asqa_toy.json"), _json(TRACES / "inputs" / "scenarios.json")


def toy_shot_records() -> list[dict]:
    """The six training questions as `cq convert asqa` records (gold.dqs, gold.long_answers)."""
    return [{"id": tid, "question": t["ambiguous_question"],
             "gold": {"dqs": [{"question": p["question"], "answers": p["short_answers"]} for p in t["qa_pairs"]],
                      "long_answers": [a["long_answer"] for a in t["annotations"]]}}
            for tid, t in TOY["train"].items()]


def toy_record(dev: str) -> dict:
    question = TOY["dev"][dev]["ambiguous_question"]
    pool = [s.split(" | ", 1) for s in SCENES["pools"][question]]
    return {"id": dev, "question": question,
            "passages": [{"id": f"p{n}", "title": t, "text": x} for n, (t, x) in enumerate(pool, 1)]}


def query_words(query: str, passage: str) -> float:
    """The traces' cross-encoder stand-in: how many query words are words of the passage."""
    words = set(re.findall(r"\w+", passage.lower()))
    return float(sum(w in words for w in re.findall(r"\w+", query.lower())))


class UnitEncoder(FakeEncoder):
    """The traces' bi-encoder stand-in: hashed bag of words, 64 dimensions, unit length."""

    def __init__(self):
        super().__init__(dim=64)

    def encode(self, texts, batch_size=32, normalize_embeddings=False, **kwargs):
        return super().encode(texts, batch_size, True, **kwargs)


def is_verify(prompt: str) -> bool:
    return "\nProposed Answer: " in prompt


def is_final(prompt: str) -> bool:
    return prompt.endswith("\nAnswer:")


def tag(prompt: str) -> str:
    return "verify" if is_verify(prompt) else "long-answer" if is_final(prompt) else "expand"


def scene_lm() -> FakeGenerator:
    """The traces' scripted model: an expansion's completions by the node's question, one per new
    prompt (a repeated prompt gets its earlier text, as dsp's cache and a seeded sampler do); the
    verification verdict by proposed answer; the long answer."""
    memo, used = {}, {}

    def reply(prompt: str) -> str:
        if is_verify(prompt):
            return SCENES["verify"].get(prompt.rsplit("\nProposed Answer: ", 1)[1], "True")
        if is_final(prompt):
            return SCENES["long"]
        if prompt not in memo:
            question = prompt.rsplit("\nQuestion: ", 1)[1].split("\n", 1)[0]
            seq, k = SCENES["expand"][question], used.get(question, 0)
            used[question] = k + 1
            memo[prompt] = seq[min(k, len(seq) - 1)]
        return memo[prompt]

    return FakeGenerator(reply)


def replay(dev: str, verify: bool, **options):
    from cqtools.stages import templates
    from cqtools.stages.shots import ShotSelector, shot_from_record
    from cqtools.stages.toc import TocConfig
    from cqtools.stages.toc_run import TocRunner

    gen = scene_lm()
    shots = [shot_from_record(r, None, 1) for r in toy_shot_records()]
    selector = ShotSelector(shots, encoder=UnitEncoder(), metric="l2")
    config = TocConfig(verify=verify, **{"evidence_match": "chars", **options})
    runner = TocRunner(gen, FakeCrossEncoder(query_words), selector, templates.load("toc"), config, seed=0)
    record = toy_record(dev)
    runner.run([record], {"model": "fake"})
    return gen, record


def trace_lm(name: str) -> list[dict]:
    return [s for s in _json(TRACES / f"{name}.trace.json")["steps"] if s["step"] == "lm"]


def same_prompt_but_wording(mine: str, theirs: str, demos: dict) -> bool:
    """``mine`` is the trace's prompt with cq's wording in the authors' placeholders and cq's demo
    choice (each demo rendered byte for byte as the trace renders it)."""
    from cqtools.stages import templates

    t = templates.load("toc")
    if is_verify(theirs):
        return mine == t("verify", passage="", question="", answer="").split("\n")[0] + "\n" + theirs.split("\n", 1)[1]
    blocks, their_blocks = mine.split("\n\n---\n\n"), theirs.split("\n\n---\n\n")
    shown = re.findall(r"^Question: (.*)$", blocks[1], re.M)
    return (len(blocks) == 4 and blocks[0] == t("instruction") and blocks[2] == t("format")
            and blocks[3] == their_blocks[3] and blocks[1] == "\n\n".join(demos[q] for q in shown))


def trace_demos(steps: list[dict]) -> dict:
    """Each demo as the traces' prompts render it, by its question."""
    out = {}
    for step in steps:
        if step["tag"] in ("expand", "long-answer"):
            for demo in step["prompt"].split("\n\n---\n\n")[1].split("\n\nQuestion: "):
                demo = demo if demo.startswith("Question: ") else "Question: " + demo
                out[demo.split("\n", 1)[0][len("Question: "):]] = demo
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_released_traces_replay_call_for_call(name):
    """The released loop's calls, in order, with the same prompts (placeholders and demo choice
    aside), the same nodes in the same order and the same tree. Not reproduced: dsp's follow-up call
    for a completion without a long answer (trace C, calls 2 and 8; it never changes the pairs), and
    which demos kNN picks (the traces' hash of words is not ours, docs/methods-toc.md)."""
    dev, verify = RUNS[name]
    gen, record = replay(dev, verify)
    steps = [s for s in trace_lm(name) if not s["tag"].startswith("expand:")]
    assert [tag(x["prompt"]) for x in gen.log] == [s["tag"] for s in steps]
    demos = trace_demos(steps)
    for n, (mine, theirs) in enumerate(zip(gen.log, steps)):
        assert same_prompt_but_wording(mine["prompt"], theirs["prompt"], demos), f"call {n + 1}"
        greedy = theirs["decoding"]["temperature"] == 0
        assert (mine["temperature"], mine["max_new_tokens"]) == (theirs["decoding"]["temperature"], 300)
        assert mine["top_p"] == 1 and (greedy or mine["seed"] is not None)
    tree = _json(TRACES / f"{name}.tree.json")
    got = [{"question": n["question"], "depth": n["depth"] + 1, "answer": n["answer"]} for n in record["tree"][1:]]
    assert got == tree["valid_nodes"] and record["long_answer"] == SCENES["long"]
    assert [(d["question"], d["answer"]) for d in record["dqs"]] == [(n["question"], n["answer"])
                                                                    for n in tree["valid_nodes"][:10]]
