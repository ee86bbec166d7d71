"""cq convert: every public format into records, gold under one key."""
import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, parse_jsonl


def convert(runner, *args):
    result = runner.invoke(cli, ["convert", *args])
    assert result.exit_code == 0, result.output
    return parse_jsonl(result.stdout)


def test_ambignq_light(runner):
    records = convert(runner, "ambignq", str(FIXTURES / "ambignq_light.json"))
    assert len(records) == 30
    by_id = {r["id"]: r for r in records}
    joker = by_id["fx01"]
    assert set(joker) == {"id", "question", "gold"}
    assert joker["gold"]["ambiguous"] is True
    assert len(joker["gold"]["annotations"]) == 2
    assert joker["gold"]["answers"][0][0] == "Heath Ledger"
    assert joker["gold"]["dqs"][1]["question"] == "Who played the Joker in Joker (2019)?"
    assert by_id["fx02"]["gold"]["ambiguous"] is False
    assert by_id["fx02"]["gold"]["dqs"] == []
    assert sum(r["gold"]["ambiguous"] for r in records) == 18


def test_ambignq_full_keeps_annotation_byproducts_under_gold(runner):
    records = convert(runner, "ambignq", str(FIXTURES / "formats" / "ambignq_full.json"))
    assert len(records) == 2
    for record in records:
        assert set(record) == {"id", "question", "gold"}
        assert "used_queries" in record["gold"] and "viewed_doc_titles" in record["gold"]


def test_cambignq(runner):
    records = convert(runner, "cambignq", str(FIXTURES / "cambignq.json"))
    assert len(records) == 18
    first = records[0]
    assert first["gold"]["cq"].startswith("Which ")
    assert len(first["gold"]["dqs"]) == len(first["gold"]["answers"])
    assert all(r["gold"]["ambiguous"] for r in records)


def test_join_fills_cq_for_ambiguous_questions_only(runner, questions):
    records = convert(runner, "ambignq", str(FIXTURES / "ambignq_light.json"),
                      "--join", f"cambignq:{FIXTURES / 'cambignq.json'}")
    assert records == questions  # fixtures/questions.jsonl is exactly this conversion
    assert sum("cq" in r["gold"] for r in records) == 18
    assert all(("cq" in r["gold"]) == r["gold"]["ambiguous"] for r in records)


@pytest.mark.parametrize("name", ["asqa.json", "formats/asqa_dict.json"])
def test_asqa_layouts(runner, name):
    records = convert(runner, "asqa", str(FIXTURES / name))
    assert records
    for record in records:
        assert len(record["gold"]["long_answers"]) == 2
        assert record["gold"]["dqs"] and all(d["answers"] for d in record["gold"]["dqs"])


def test_nq_open(runner):
    records = convert(runner, "nq-open", str(FIXTURES / "formats" / "nq_open.jsonl"))
    assert [r["id"] for r in records] == [f"nq-{n}" for n in range(1, 6)]
    assert all(r["gold"]["answers"] and r["gold"]["ambiguous"] is None for r in records)


def test_dpr_tsv_with_quotes(runner):
    passages = convert(runner, "dpr", str(FIXTURES / "formats" / "psgs_w100.tsv"))
    assert len(passages) == 8
    assert [p["id"] for p in passages] == [str(n) for n in range(1, 9)]
    assert any('"zebra crossing"' in p["text"] for p in passages)
    assert all(set(p) == {"id", "title", "text"} for p in passages)


def test_passages_jsonl(runner):
    passages = convert(runner, "passages", str(FIXTURES / "corpus.jsonl"))
    assert len(passages) >= 100 and len({p["id"] for p in passages}) == len(passages)


def test_wrong_format_is_one_clear_line(runner):
    result = runner.invoke(cli, ["convert", "cambignq", str(FIXTURES / "ambignq_light.json")])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "missing dqs" in result.stderr and "Traceback" not in result.stderr


def test_missing_file(runner):
    result = runner.invoke(cli, ["convert", "ambignq", "/nonexistent.json"])
    assert result.exit_code == 1
    assert "file not found" in result.stderr


def test_real_dev_light(runner, shared_data):
    records = convert(runner, "ambignq", str(shared_data / "ambignq" / "dev_light.json"))
    assert len(records) == 1503
    assert all(r["gold"]["answers"] for r in records)
    full = convert(runner, "ambignq", str(shared_data / "ambignq" / "dev_full_sample.json"))
    assert len(full) == 222 and all("used_queries" in r["gold"] for r in full)
    asqa = convert(runner, "asqa", str(shared_data / "asqa" / "dev.json"))
    assert len(asqa) == 709


def test_ids_and_limit(runner, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("fx05\nfx02\nnope\n\nfx09\n")
    records = convert(runner, "ambignq", str(FIXTURES / "ambignq_light.json"), "--ids", str(ids), "--limit", "2")
    assert [r["id"] for r in records] == ["fx02", "fx05"]  # file order of the source, not of the list


def test_exclude_ids_takes_an_id_list_or_a_jsonl_file(runner, tmp_path):
    everything = convert(runner, "ambignq", str(FIXTURES / "ambignq_light.json"))
    scored = tmp_path / "scored.jsonl"
    scored.write_text("".join(f'{{"id": "{r["id"]}", "question": "q"}}\n' for r in everything[:3]))
    listed = tmp_path / "ids.txt"
    listed.write_text("\n".join(r["id"] for r in everything[:3]) + "\n")
    want = [r["id"] for r in everything[3:]]
    for drop in (scored, listed):
        rest = convert(runner, "ambignq", str(FIXTURES / "ambignq_light.json"), "--exclude-ids", str(drop))
        assert [r["id"] for r in rest] == want
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "fx01"}\n{"question": "no id"}\n')
    result = runner.invoke(cli, ["convert", "ambignq", str(FIXTURES / "ambignq_light.json"), "--exclude-ids", str(bad)])
    assert result.exit_code == 2 and f"{bad}:2: not a JSON record with an id" in result.output


def test_silver_cq_only_where_no_gold_cq(runner):
    plain = convert(runner, "ambignq", str(FIXTURES / "ambignq_light.json"), "--silver-cq")
    joined = convert(runner, "ambignq", str(FIXTURES / "ambignq_light.json"), "--silver-cq",
                     "--join", f"cambignq:{FIXTURES / 'cambignq.json'}")
    for a, b in zip(plain, joined):
        if not a["gold"]["ambiguous"]:
            assert "cq" not in a["gold"] and "cq" not in b["gold"]
            continue
        assert a["gold"]["cq"].startswith("Which ") and a["gold"]["cq"].endswith("?")
        assert a["gold"]["cq_source"].startswith("silver")
        assert b["gold"]["cq_source"] == "gold"
    joker = next(r for r in plain if r["id"] == "fx01")["gold"]["cq"]
    assert "The Dark Knight" in joker and "Suicide Squad" in joker
