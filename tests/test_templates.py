"""Every LM prompt comes from a template (cqtools/stages/templates/*.txt): ``--prompt FILE`` replaces
a part of any method's template, the requests an OpenAI-compatible server receives carry it, and the
record's meta names the file and its digest. cq's own wording leaves records as they were (the run
record's prompts version covers it; tests/test_replay.py checks the records)."""
import orjson
import pytest

from cqtools.cli import cli
from cqtools.errors import InputError
from cqtools.stages import prompts, prompts_disamb, templates

from .conftest import parse_jsonl
from .fakes import FakeGenerator

PASSAGES = [{"id": "p1", "title": "The Dark Knight", "text": "Heath Ledger played the Joker in The Dark Knight."},
            {"id": "p2", "title": "Joker (2019 film)", "text": "Joaquin Phoenix played the Joker in the 2019 film."}]
DQS = [{"question": "Who played the Joker in The Dark Knight?", "answer": "Heath Ledger"},
       {"question": "Who played the Joker in Joker (2019)?", "answer": "Joaquin Phoenix"}]


def base(**extra):
    return {"id": "q1", "question": "Who played the Joker?", "passages": PASSAGES, **extra}


# (what, command args, template, part to replace, input record)
CASES = [
    ("detect llm", ["detect", "--method", "llm"], "detect_llm", "instruction", base()),
    ("gen-cq llm", ["gen-cq", "--method", "llm", "--all"], "gencq_llm", "instruction", base()),
    ("gen-cq llm zero-shot", ["gen-cq", "--method", "llm", "--zero-shot", "--all"], "gencq_llm", "zero_shot",
     base()),
    ("answer single", ["answer", "--mode", "single", "--reader", "generative", "--grounding", "none"], "reader",
     "single", base()),
    ("answer multi", ["answer", "--mode", "multi", "--reader", "generative", "--grounding", "none"], "reader",
     "multi", base()),
    ("answer long", ["answer", "--mode", "long"], "long", "instruction", base(dqs=DQS)),
    ("oracle llm", ["oracle", "--method", "llm"], "oracle_llm", "free",
     base(cq={"text": "Do you mean a film?", "options": []},
          gold={"ambiguous": True, "intended": 1, "dqs": DQS, "answers": [["Heath Ledger"], ["Joaquin Phoenix"]]})),
    ("disambiguate qd", ["disambiguate", "--method", "qd"], "qd", "instruction",
     base(answers=[{"text": "Heath Ledger"}, {"text": "Joaquin Phoenix"}])),
    ("disambiguate rac", ["disambiguate", "--method", "rac"], "rac", "instruction", base()),
    ("disambiguate disambig-first", ["disambiguate", "--method", "disambig-first"], "disambig_first", "instruction",
     base(ambiguity={"label": True, "score": 0.9})),
]


def test_every_builtin_template_loads_and_names_its_parts():
    for name in templates.names():
        tpl = templates.builtin(name)
        assert tpl.parts and tpl.source == f"cq:{name}" and templates.meta(tpl) == {}
    used = {case[2] for case in CASES} | {"clam", "toc"}
    assert used == set(templates.names()) == set(templates.USED_BY)  # every file is read, and documented


def test_a_prompt_file_reaches_the_functions_that_render_each_prompt(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("[[instruction]]\nMINE\n[[label_true]]\n Yes\n[[label_false]]\n No\n")
    tpl = prompts.detect_template(str(path))
    assert prompts.detect_prefix(tpl).startswith("MINE\n\nQ: ") and prompts.detect_labels(tpl) == (" Yes", " No")
    assert prompts.detect_prefix() == prompts.detect_prefix(templates.builtin("detect_llm"))
    empty = tmp_path / "empty.txt"
    empty.write_text("[[instruction]]\n[[shots]]\n")
    bare = prompts.gencq_template(str(empty))
    assert prompts.gencq_prefix(bare) == ""  # no instruction, no shots: no blank lines either
    rac = templates.load("rac", None)
    assert prompts_disamb.rac_prompt("Q?", ["a passage"], [("S?", [("D?", "x")])], rac).endswith(
        "Passage: a passage\nQuestion: Q?\nDisambiguations:\n1.")


def test_a_part_the_method_does_not_have_or_a_slot_it_cannot_fill_is_an_error(tmp_path):
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("[[preamble]]\nx\n")
    with pytest.raises(InputError, match=r"template rac has no part \[\[preamble\]\]"):
        templates.load("rac", str(wrong))
    slot = tmp_path / "slot.txt"
    slot.write_text("[[query]]\n{question} {answer}\n")
    with pytest.raises(InputError, match=r"uses slot \{answer\}"):
        templates.load("long", str(slot))


def test_the_gen_cq_primer_comes_from_the_template(tmp_path):
    from cqtools.stages.gen_cq import LlmOptions, gen_cq_batch, llm_method

    path = tmp_path / "p.txt"
    path.write_text("[[primer]]\n Which\n")
    fake = FakeGenerator(" Which film: The Dark Knight or Joker?", on=lambda p: p)
    out = gen_cq_batch([base()], llm_method(fake, LlmOptions(n_passages=2), tpl=prompts.gencq_template(str(path))),
                       all_records=True)
    assert out[0]["cq"]["text"] == "Which film: The Dark Knight or Joker?"
    assert out[0]["meta"]["gen_cq"]["template"] == str(path)


# --- through an OpenAI-compatible server ---------------------------------------------------------------

def _sent_texts(requests) -> list[str]:
    out = []
    for r in requests:
        body = r["body"]
        if "prompt" in body:
            out.append(body["prompt"])
        elif "messages" in body:
            out.append("\n".join(m["content"] for m in body["messages"]))
    return out


def _template_meta(record) -> list[dict]:
    return [v for v in record.get("meta", {}).values() if isinstance(v, dict) and "template_digest" in v]


@pytest.mark.parametrize("what,args,name,part,record", CASES, ids=[c[0] for c in CASES])
def test_prompt_file_replaces_a_part_of_every_methods_template(what, args, name, part, record, runner, server,
                                                              tmp_path, monkeypatch):
    from cqtools.models import openai_backend

    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_KEY", "sk-test")
    openai_backend._GENERATORS.clear()
    api = ["--model", "openai:fake", "--api-base", server.url, "-q"]
    own = templates.builtin(name).text(part)
    mark = "MARK-" + name.upper()
    mine = tmp_path / "mine.txt"
    mine.write_text(f"[[{part}]]\n{mark} {own}\n")
    stdin = orjson.dumps(record).decode() + "\n"

    server.control(reset=True, reply=" Which film: The Dark Knight or Joker? Heath Ledger\nmore")
    plain = runner.invoke(cli, args + api, input=stdin, catch_exceptions=False)
    assert plain.exit_code == 0, plain.stderr
    sent = _sent_texts(server.requests())
    assert sent and not any(mark in text for text in sent)
    assert _template_meta(parse_jsonl(plain.stdout)[0]) == []  # cq's own wording: records as before

    server.control(reset=True, reply=" Which film: The Dark Knight or Joker? Heath Ledger\nmore")
    result = runner.invoke(cli, args + api + ["--prompt", str(mine)], input=stdin, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    sent = _sent_texts(server.requests())
    assert sent and all(mark in text for text in sent), (what, sent[:1])
    (meta,) = _template_meta(parse_jsonl(result.stdout)[0])
    assert meta["template"] == str(mine) and len(meta["template_digest"]) == 12

    bad = tmp_path / "bad.txt"
    bad.write_text("[[no_such_part]]\nx\n")
    refused = runner.invoke(cli, args + api + ["--prompt", str(bad)], input=stdin)
    assert refused.exit_code != 0 and f"template {name} has no part [[no_such_part]]" in refused.stderr
    assert "Traceback" not in refused.stderr
    openai_backend._GENERATORS.clear()


# --- a prompt file is bounded, UTF-8, {name} slots only, checked before any model loads (issue 36, item 7) ---

@pytest.mark.parametrize("content, said", [
    (b"[[instruction]]\n" + b"x" * (1 << 20), "too large for a prompt template"),
    ("[[instruction]]\nQuestion d\xe9j\xe0 vu\n".encode("latin-1"), "not UTF-8 text (byte 26"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text (byte 0"),
    (b"[[shot]]\n{question:>300000000}\n", "slot {question:>300000000} is not a plain {name}"),
    (b"[[shot]]\n{question.upper}\n", "slot {question.upper} is not a plain {name}"),
    (b"[[shot]]\n{question[0]}\n", "slot {question[0]} is not a plain {name}"),
    (b"[[shot]]\n{question!r}\n", "slot {question!r} is not a plain {name}"),
], ids=["huge", "latin-1", "binary", "format-spec", "attribute", "index", "conversion"])
def test_a_bad_prompt_file_is_refused_before_the_model_loads(runner, tmp_path, content, said):
    prompt = tmp_path / "prompt.txt"
    prompt.write_bytes(content)
    missing = str(tmp_path / "no-such-model")  # loading it would fail: the prompt must be refused first
    for args in (["detect", "--method", "llm"], ["gen-cq", "--method", "llm"], ["answer", "--reader", "generative"]):
        result = runner.invoke(cli, args + ["--model", missing, "--prompt", str(prompt)],
                               input='{"id": "q1", "question": "Who?"}\n')
        assert result.exit_code == 1 and said in result.stderr, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr and "no-such-model" not in \
            result.stderr.split("--prompt")[0]
