"""`cq view` shows a record whose fields have unexpected shapes (issue 57 item 7: an `ambiguity.label` list or
dict, `passages` an int, `gold.ambiguous` a list dropped the connection with a traceback on 6fba24f): every page
answers, the odd value shown as text; a query string of more than 20 fields is a 400 page."""
import json

from .view_helpers import get, serving

ODD = [3, "s", [1, [2]], {"x": 1}, True, [{"text": 3}], 2.5]
KEYS = ["passages", "answers", "dqs", "cq", "ambiguity", "gold", "ambiguity.label", "ambiguity.score",
        "gold.ambiguous", "gold.answers", "gold.dqs", "gold.cq", "question", "cq.options", "cq.text"]


def odd_records() -> list[dict]:
    records = []
    for key in KEYS:
        for value in ODD:
            record = {"id": f"{key}={json.dumps(value)}", "question": "Q?", "ambiguity": {"label": True},
                      "cq": {"text": "Which?", "options": ["a"]}, "gold": {"ambiguous": True}}
            outer, _, inner = key.partition(".")
            if inner:
                record[outer] = {**record[outer], inner: value}
            else:
                record[outer] = value
            records.append(record)
    return records


def test_every_page_of_odd_values_answers(tmp_path):
    path = tmp_path / "odd.jsonl"
    records = odd_records()
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with serving([path, path]) as (base, _):
        pages = ["/", "/?sort=f1", "/compare"] + [f"/record/{i}" for i in range(len(records))]
        statuses = {page: get(base + page)[0] for page in pages}
        assert {page: status for page, status in statuses.items() if status != 200} == {}
        shown = {r["id"]: get(base + f"/record/{i}")[2] for i, r in enumerate(records)}
    assert "[1,[2]]" in shown['ambiguity.label=[1, [2]]'] and "{&quot;x&quot;:1}" in shown['ambiguity.label={"x": 1}']
    assert "passages is not a list" in shown["passages=3"] and "[1,[2]]" in shown["gold.ambiguous=[1, [2]]"]


def test_a_query_of_more_than_20_fields_is_a_400_page(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "Q?"}) + "\n")
    with serving([path]) as (base, _):
        status, _, body = get(base + "/?" + "&".join(f"f{i}=1" for i in range(25)))
    assert status == 400 and "at most 20 query fields" in body
