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
    from cqtools.models.load import load_generator

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
    gen = scene_lm()
    return gen, replay_with(gen, dev, verify, **options)


def replay_with(gen, dev: str, verify: bool = True, **options) -> dict:
    from cqtools.stages import templates
    from cqtools.stages.shots import ShotSelector, shot_from_record
    from cqtools.stages.toc import TocConfig
    from cqtools.stages.toc.run import TocRunner

    shots = [shot_from_record(r, None, 1) for r in toy_shot_records()]
    selector = ShotSelector(shots, encoder=UnitEncoder(), metric="l2")
    config = TocConfig(verify=verify, **{"evidence_match": "chars", **options})
    runner = TocRunner(gen, FakeCrossEncoder(query_words), selector, templates.load("toc"), config, seed=0)
    record = toy_record(dev)
    runner.run([record], {"model": "fake"})
    return record


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


def test_trace_a_verifies_during_growth_dedups_and_overshoots():
    gen, record = replay("dA", True)
    aq = record["question"]
    verifies = [x["prompt"] for x in gen.log if is_verify(x["prompt"])]
    # the verification prompt asks about the AQ and never shows the DQ
    assert all(f"\nQuestion: {aq}\n" in p for p in verifies)
    assert not any("Who founded the first fishing village of Varrow?" in p for p in verifies)
    answers = [p.rsplit("\nProposed Answer: ", 1)[1] for p in verifies]
    # the repeated DQ whose answer extends the earlier one is dropped without a verification call ...
    assert "Elin Markby in 1402" not in answers and answers.count("Elin Markby") == 2
    # ... and the same answer under a new DQ is verified and kept
    questions = [n["question"] for n in record["tree"][1:]]
    assert "Which ancestor of the ruling Markby family founded Varrow?" in questions
    assert "Who founded the Varrow football club?" not in questions  # verified False: never a node
    meta = record["meta"]["disambiguate"]
    assert (meta["valid_nodes"], meta["deduplicated"], meta["rejected"], meta["verifications"]) == (11, 1, 3, 14)
    assert meta["model_calls"] == 19 and meta["stop"] == "max_nodes" and meta["pruning_off_at"] is None
    # 11 nodes (the last expansion's pairs all added), the first 10 in dqs and in the long answer
    assert len(record["dqs"]) == 10 and "Which expedition leader" not in gen.log[-1]["prompt"]
    assert "DQ 10: Who founded the overseas colony of New Varrow?\nDA 10: Jonas Thale's settlers\n\nAnswer:" \
        in gen.log[-1]["prompt"]
    # every node below the root sits at level 1 or 2 (verification never lets more through here)
    assert {n["depth"] for n in record["tree"][1:]} == {1, 2}


def test_trace_b_restarts_then_switches_pruning_off():
    gen, record = replay("dB", True)
    meta = record["meta"]["disambiguate"]
    # 16 pops (two skipped as too deep), 4 restarts, pruning off after the third failed restart
    assert (meta["pops"], meta["restarts"], meta["skipped"], meta["pruning_off_at"]) == (16, 4, 2, 7)
    assert meta["removed_demos"] == ["t2"] and meta["stop"] == "max_pops"
    # after the switch-off nothing is verified and duplicates (a rejected pair's DQ too) become nodes
    assert [tag(x["prompt"]) for x in gen.log].index("verify", 9) == 11  # last verification: call 12
    questions = [n["question"] for n in record["tree"][1:]]
    assert questions.count("When did the Sunvale passenger ferry start running?") == 7
    assert "When did the Sunvale car ferry start running?" in questions
    assert [n["verified"] for n in record["tree"][1:]][:1] == [True] and record["tree"][2]["verified"] is None
    # the demo pool lost t2 for every later prompt, the long answer's included
    assert all("Kestrel Bridge" not in x["prompt"] for x in gen.log[3:] if not is_verify(x["prompt"]))


def test_trace_c_creates_level_3_nodes_but_never_expands_them():
    gen, record = replay("dC", False)
    levels = [n["depth"] for n in record["tree"][1:]]
    assert max(levels) == 3 and record["meta"]["disambiguate"]["skipped"] == 2
    expanded = [x["prompt"].rsplit("\nQuestion: ", 1)[1].split("\n", 1)[0] for x in gen.log if tag(x["prompt"]) == "expand"]
    deep = {n["question"] for n in record["tree"][1:] if n["depth"] == 3}
    assert deep and not deep & set(expanded)
    assert not any(is_verify(x["prompt"]) for x in gen.log)  # no --verify: no verification, no dedup


def test_prompt_slots_demos_nearest_last_and_reranked_passages():
    from cqtools.stages.shots import ShotSelector, shot_from_record

    gen, record = replay("dA", True)
    first = gen.log[0]["prompt"]
    blocks = first.split("\n\n---\n\n")
    demos = blocks[1].split("\n\nQuestion: ")
    assert len(demos) == 5 and all("\nAnswer: " in d and "\nDQ 2: " in d and "«" not in d for d in demos)
    # nearest last: the demo right before the query is the kNN's first pick for the AQ
    selector = ShotSelector([shot_from_record(r, None, 1) for r in toy_shot_records()], encoder=UnitEncoder(),
                            metric="l2")
    nearest = selector.shots[selector.nearest([record["question"]], 1, [range(6)])[0][0]]
    assert demos[-1].split("\n", 1)[0].endswith(nearest[0])
    # passages: the pool reranked for the question, top 5, numbered, whole "title | text"
    ranked = sorted(toy_record("dA")["passages"], key=lambda p: -query_words(record["question"], f"{p['title']} | {p['text']}"))
    lines = blocks[3].split("\n\n")[0].split("\n")[1:]
    assert lines == [f"[{n}] «{p['title']} | {p['text']}»" for n, p in enumerate(ranked[:5], 1)]
    assert blocks[3].endswith(f"Question: {record['question']}\n\nDisambiguations:")


def test_evidence_match_tokens_differs_from_the_released_call_only_where_the_trace_says():
    """The released get_evidence passes the answer string where dsp wants a list, so it matches
    the answer's characters: any answer with a space or an "a" is in every passage. With
    evidence_match=tokens, trace A's call 8 (a cache hit in the trace) gets other evidence."""
    steps = trace_lm("A_varrow_verify")
    demos = trace_demos(steps)
    gen, _ = replay("dA", True, evidence_match="tokens")
    differ = [n + 1 for n, (x, s) in enumerate(zip(gen.log, steps))
              if not same_prompt_but_wording(x["prompt"], s["prompt"], demos)]
    assert differ == [8] and "\nContext: Varrow | Varrow began as a fishing village" in gen.log[7]["prompt"]


# --- through the CLI -------------------------------------------------------------------------------

def seeded_lm() -> FakeGenerator:
    """Expansions whose text depends on the prompt's seed (as a sampler's does); verifications True."""
    gen = FakeGenerator()

    def reply(prompt: str) -> str:
        if is_verify(prompt):
            return "True"
        if is_final(prompt):
            return "A long answer."
        question = prompt.rsplit("\nQuestion: ", 1)[1].split("\n", 1)[0].rstrip("?")
        n = (gen.log[-1]["seed"] or 0) % 3
        return f"DQ 1: {question} in version {n}?\nDA 1: answer {n}\nAnswer: long"

    gen.replies = reply
    return gen


@pytest.fixture
def toc_models(monkeypatch):
    from cqtools.models import load as loader

    made = {"generator": seeded_lm()}
    monkeypatch.setattr(loader, "load_generator", lambda *a, **k: made["generator"])
    monkeypatch.setattr(loader, "load_cross_encoder", lambda *a, **k: FakeCrossEncoder(query_words))
    monkeypatch.setattr(loader, "load_encoder", lambda *a, **k: UnitEncoder())
    return made


@pytest.fixture
def shots_file(tmp_path) -> str:
    path = tmp_path / "shots.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in toy_shot_records()))
    return str(path)


def toy_input() -> str:
    return "".join(json.dumps(toy_record(d)) + "\n" for d in ("dA", "dB", "dC"))


def cq(runner, args, text=None):
    from cqtools.cli import cli

    result = runner.invoke(cli, ["disambiguate", "--method", "toc", "-q", *args], input=text or toy_input())
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_cli_writes_tree_dqs_long_answer_and_meta(runner, toc_models, shots_file, tmp_path):
    records = cq(runner, ["--shots", shots_file, "--seed", "1"])
    gen = toc_models["generator"]
    for record in records:
        meta = record["meta"]["disambiguate"]
        assert meta["method"] == "toc" and meta["seed"] == 1 and meta["shots"] == 6 and len(meta["template"]) == 12
        assert record["long_answer"] == "A long answer." and record["meta"]["answer"]["by"] == "disambiguate --method toc"
        assert record["dqs"] and record["tree"][0]["question"] == record["question"]
    expand = [x for x in gen.log if tag(x["prompt"]) == "expand"]
    assert {(x["temperature"], x["top_p"], x["max_new_tokens"]) for x in expand} == {(0.7, 1.0, 300)}
    assert {(x["temperature"], x["max_new_tokens"]) for x in gen.log if tag(x["prompt"]) != "expand"} == {(0.0, 300)}
    assert "\n\n---" in expand[0]["stop"]
    # --prompt FILE replaces a part; its digest goes into meta
    own = tmp_path / "mine.txt"
    own.write_text("[[instruction]]\nMY OWN INSTRUCTION.\n")
    toc_models["generator"] = seeded_lm()
    again = cq(runner, ["--shots", shots_file, "--seed", "1", "--prompt", str(own)])
    assert toc_models["generator"].log[0]["prompt"].startswith("MY OWN INSTRUCTION.\n\n---\n\n")
    assert again[0]["meta"]["disambiguate"]["template"] != records[0]["meta"]["disambiguate"]["template"]


def test_a_later_long_answer_keeps_the_one_toc_wrote(runner, toc_models, shots_file):
    """`cq answer --mode long` after ToC's loop keeps ToC's long answer (it replaced it with cq's own zero-shot
    160-token one), says so once, and still writes one for a record ToC did not answer."""
    import orjson

    from cqtools.cli import cli

    records = cq(runner, ["--shots", shots_file, "--seed", "1"])
    other = dict(records[0], id="mine", meta={}, long_answer=None)
    toc_models["generator"] = seeded_lm()
    result = runner.invoke(cli, ["answer", "--mode", "long", "--preset", "toc"],
                           input="".join(orjson.dumps(r).decode() + "\n" for r in [*records, other]))
    assert result.exit_code == 0, result.output
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r["long_answer"] for r in out[:3]] == ["A long answer."] * 3
    assert [r["meta"]["answer"]["by"] for r in out[:3]] == ["disambiguate --method toc"] * 3
    assert out[3]["meta"]["answer"]["mode"] == "long" and "by" not in out[3]["meta"]["answer"]
    assert result.stderr.count("kept the long answer `cq disambiguate --method toc` wrote") == 1


def test_same_seed_same_output_any_batch_size(runner, toc_models, shots_file):
    def strip(records):
        return [{k: v for k, v in r.items() if k != "meta"} for r in records]

    one = cq(runner, ["--shots", shots_file, "--seed", "5", "--batch-size", "1"])
    toc_models["generator"] = seeded_lm()
    three = cq(runner, ["--shots", shots_file, "--seed", "5", "--batch-size", "3"])
    toc_models["generator"] = seeded_lm()
    same = cq(runner, ["--shots", shots_file, "--seed", "5", "--batch-size", "2"])
    assert strip(one) == strip(three) == strip(same)
    toc_models["generator"] = seeded_lm()
    other = cq(runner, ["--shots", shots_file, "--seed", "6"])
    assert strip(other) != strip(one)


def test_builtin_demos_and_options_are_checked(runner, toc_models):
    from cqtools.cli import cli

    records = cq(runner, ["--no-verify", "--max-nodes", "2"])
    assert all(len(r["dqs"]) <= 3 for r in records)
    assert "Bolivia" in toc_models["generator"].log[0]["prompt"]  # built-in demos, with long answers
    bad = runner.invoke(cli, ["disambiguate", "--method", "toc", "-O", "verfy=false"], input=toy_input())
    assert bad.exit_code != 0 and "verify" in bad.output


def test_openai_backend_samples_expansions_and_verifies_greedily(runner, monkeypatch, tmp_path):
    """Request bodies: expansions at temperature 0.7, top_p 1 with a per-prompt seed; verifications
    and the long answer at temperature 0 (seed 0); 300 tokens each; raw completions."""
    import sys

    from cqtools.models import load as loader
    from cqtools.models import openai_backend

    from .test_openai_backend import Server

    server = Server([sys.executable, "-m", "tests.openai_server"])
    try:
        server.control(reset=True, reply="DQ 1: Who won the first Pellham derby?\nDA 1: Pellham Rovers\nAnswer: True")
        monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("CQ_API_KEY", "sk-test")
        monkeypatch.setattr(loader, "load_cross_encoder", lambda *a, **k: FakeCrossEncoder(query_words))
        monkeypatch.setattr(loader, "load_encoder", lambda *a, **k: UnitEncoder())
        openai_backend._GENERATORS.clear()
        text = json.dumps(toy_record("dC")) + "\n"
        records = cq(runner, ["--model", "openai:fake", "--api-base", server.url, "--seed", "2"], text)
        sent = [r["body"] for r in server.requests()]
    finally:
        server.stop()
        openai_backend._GENERATORS.clear()
    assert records[0]["dqs"][0] == {**records[0]["dqs"][0], "question": "Who won the first Pellham derby?"}
    expand = [b for b in sent if b["prompt"].endswith("Disambiguations:")]
    verify = [b for b in sent if is_verify(b["prompt"])]
    final = [b for b in sent if is_final(b["prompt"])]
    assert expand and verify and len(final) == 1
    assert all(b["temperature"] == 0.7 and b["top_p"] == 1.0 and b["max_tokens"] == 300 for b in expand)
    seeds = {b["seed"] for b in expand}
    assert 0 not in seeds and len(seeds) == len({b["prompt"] for b in expand})  # one seed per distinct prompt
    assert all(b["temperature"] == 0 and b["seed"] == 0 and "top_p" not in b and b["max_tokens"] == 300
               for b in verify + final)


def test_the_toc_preset_sets_only_valid_toc_options():
    from cqtools.presets import toc
    from cqtools.registry import DISAMBIGUATORS

    method = DISAMBIGUATORS.get("toc")
    values = toc.PRESET.values("disambiguate")
    assert values["method"] == "toc" and values["evidence_match"] == "chars"
    for setting in toc.PRESET.settings:
        assert setting.source and setting.command in ("disambiguate", "retrieve")
        if setting.command == "disambiguate" and setting.option != "method":
            assert method.option(setting.option).convert(setting.value, "preset toc") == setting.value
    # the pool the method reranks per node: both retrievers' top 100 (tests/test_retrieve.py runs it)
    assert toc.PRESET.values("retrieve") == {"method": "hybrid", "fusion": "pool", "hits": 100}
    assert toc.PRESET.departures


def test_logprob_rule_scores_true_against_false_and_grows_the_same_tree():
    def score(prompt: str, continuation: str) -> float:
        rejected = SCENES["verify"].get(prompt.rsplit("\nProposed Answer: ", 1)[1]) == "False"
        return -2.0 if continuation == " False" else (-3.0 if rejected else -1.0)

    gen, record = replay("dA", True, verify_rule="logprob")
    _, expected = replay("dA", True)
    assert not any(is_verify(x["prompt"]) for x in gen.log)  # no verification is generated ...
    assert gen.scored and all(c in (" True", " False") for _, c in gen.scored)  # ... each is scored
    assert record["tree"] != expected["tree"]  # the default scores (-50 each) keep nothing
    gen.scores = score
    scored = replay_with(gen, "dA", verify_rule="logprob")
    assert [n["question"] for n in scored["tree"]] == [n["question"] for n in expected["tree"]]
    assert all(n["verify"] == 1.0 for n in scored["tree"][1:])
