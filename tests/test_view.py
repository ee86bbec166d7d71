"""`cq view`: the list, a record's page and two runs compared, from an in-process server on a free port
driven with urllib; and what it refuses (XSS shown as text, no other file, other hosts, bad input)."""
import gzip
import html
import os
import re
import subprocess
import sys
import urllib.parse
from html.parser import HTMLParser

import orjson
import pytest

from cqtools.cli import cli
from cqtools.metrics import cbqa

from .conftest import ROOT
from .view_helpers import XSS, get, serving, steps, write_runs

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's cqtools in the `cq view` subprocesses


@pytest.fixture
def runs(tmp_path):
    return write_runs(tmp_path)


def ids_listed(body: str) -> list[str]:
    return [html.unescape(m) for m in re.findall(r'<a href="/record/\d+">([^<]*)</a>', body)]


def test_list_page_searches_filters_and_sorts_by_a_metric(runs):
    records = [orjson.loads(line) for line in runs[0].read_bytes().splitlines()]
    with serving([runs[0]]) as (base, viewer):
        status, headers, body = get(base + "/")
        assert status == 200 and ids_listed(body) == [r["id"] for r in records]
        _, _, found = get(base + "/?q=world+cup")
        assert ids_listed(found) == [r["id"] for r in records if "world cup" in r["question"].lower()]
        _, _, unamb = get(base + "/?gold=unambiguous")
        assert ids_listed(unamb) == [r["id"] for r in records if r["gold"]["ambiguous"] is False] == ["fx02", "fx05"]
        # detection's false positives; none is predicted unambiguous
        assert ids_listed(get(base + "/?predicted=ambiguous&gold=unambiguous")[2]) == ["fx02", "fx05"]
        assert ids_listed(get(base + "/?predicted=unambiguous")[2]) == []
        _, _, worst = get(base + "/?sort=worst&metric=answer_f1&wrong=answers")
        f1 = {r["id"]: cbqa.score_record(r["gold"]["answers"], [a["text"] for a in r["answers"]])["f1"]
              for r in records}
        expected = sorted((i for i in f1 if f1[i] < 1), key=lambda i: (f1[i], list(f1).index(i)))
        assert ids_listed(worst) == expected and expected


def test_list_pages_through_the_file(tmp_path):
    rows = steps()["gen-cq-llm"]
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"".join(orjson.dumps(dict(rows[i % len(rows)], id=f"q{i:03d}")) + b"\n" for i in range(120)))
    with serving([path]) as (base, viewer):
        pages = [ids_listed(get(base + f"/?page={n}")[2]) for n in (1, 2, 3)]
        assert [len(p) for p in pages] == [50, 50, 20]
        assert sum(pages, []) == [f"q{i:03d}" for i in range(120)]
        assert "page 3 of 3" in get(base + "/?page=99")[2]


def test_record_page_shows_what_the_record_holds_and_adds_to_each_metric(runs):
    record = orjson.loads(runs[0].read_bytes().splitlines()[0])
    n = len(record["passages"])
    reranked = dict(record, passages=[dict(p, rerank_score=float(i), rank=n - i)
                                      for i, p in enumerate(record["passages"])][::-1],
                    answers=[{"text": "Heath Ledger", "option": "The Dark Knight"}, {"text": "nobody"}])
    runs[0].write_bytes(orjson.dumps(reranked) + b"\n")
    with serving([runs[0]]) as (base, viewer):
        status, _, body = get(base + "/record/0")
    text = html.unescape(body)
    assert status == 200 and record["question"] in text and record["cq"]["text"] in text
    assert "rank before rerank" in body and "rerank score" in body
    # the last passage by retrieval score is reranked first: its row shows rank 1 and its rank before rerank
    by_score = sorted(record["passages"], key=lambda p: -p["score"])
    first_row = re.search(r"<tbody><tr><td>1</td><td>[^<]*</td><td>(\d+)</td>", body[body.index("<h2>Passages"):])
    assert int(first_row.group(1)) == [p["id"] for p in by_score].index(record["passages"][-1]["id"]) + 1
    for dq in record["gold"]["dqs"]:
        assert dq["question"] in text
    f1 = cbqa.score_record(record["gold"]["answers"], ["Heath Ledger", "nobody"])["f1"]
    assert f"<td>answer_f1</td><td>{f1:.3f}</td>" in body and 0 < f1 < 1
    # each answer with the sentence it came from, the answer marked in it
    assert "The Dark Knight (film)</b> [p0001]: <mark>Heath Ledger</mark> played the Joker, an anarchic" in body


def test_two_runs_paired_by_id_largest_change_first(runs):
    a = {r["id"]: r for r in map(orjson.loads, runs[0].read_bytes().splitlines())}
    b = {r["id"]: r for r in map(orjson.loads, runs[1].read_bytes().splitlines())}
    with serving(runs) as (base, viewer):
        status, _, body = get(base + "/compare?all=1")
        listed = [html.unescape(urllib.parse.unquote(m)) for m in re.findall(r'href="/pair\?id=([^"]*)"', body)]
        assert status == 200 and sorted(listed) == sorted(a.keys() & b.keys())
        runs_a, runs_b = viewer.runs
        largest = [max((abs(runs_b.metrics[runs_b.position[i]][m] - runs_a.metrics[runs_a.position[i]][m])
                        for m in runs_a.metrics[runs_a.position[i]]), default=0) for i in listed]
        assert largest == sorted(largest, reverse=True) and largest[0] > 0
        assert "1 ids only in A, 0 only in B" in body
        status, _, pair = get(base + "/pair?id=" + urllib.parse.quote(listed[0]))
        assert status == 200 and a[listed[0]]["cq"]["text"] in html.unescape(pair)
        assert b[listed[0]]["cq"]["text"] in html.unescape(pair)
        assert get(base + "/pair?id=nothing")[0] == 404


class Tags(HTMLParser):
    """Every start tag of a page, with its attributes, as a browser's parser reads them."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def handle_starttag(self, tag, attrs):
        self.seen.append((tag, attrs))


def test_every_field_is_escaped(runs):
    with serving(runs) as (base, viewer):
        i = viewer.runs[0].position["xss" + XSS["img"]]
        bodies = [get(base + path)[2] for path in ("/", f"/record/{i}", "/?q=" + urllib.parse.quote(XSS["script"]))]
        headers = get(base + "/")[1]
    for body in bodies:
        tags = Tags()
        tags.feed(body)
        assert not {"script", "img"} & {tag for tag, _ in tags.seen}
        assert not [name for _, attrs in tags.seen for name, _ in attrs if name.startswith("on")]
        assert html.escape("<script>") in body  # shown as text
    assert html.escape(XSS["img"]) in bodies[1] and html.escape(XSS["script"]) in bodies[1]
    assert "script-src" not in headers["Content-Security-Policy"] and "default-src 'none'" in headers[
        "Content-Security-Policy"]


def test_nothing_but_its_pages_is_served(runs):
    with serving([runs[0]]) as (base, viewer):
        for path in ("/../../etc/passwd", "/record/../../etc/passwd", "/etc/passwd", "/a.jsonl", "/record/999",
                     "/record/-1", "/compare", "/study", "//etc/passwd", "/%2e%2e/%2e%2e/etc/passwd"):
            status, _, body = get(base + path)
            assert status == 404 and "root:" not in body, path
        assert get(base + "/", {"Host": "evil.example:80"})[0] == 421  # DNS rebinding
        assert get(base + "/", {"Host": "localhost"})[0] == 200


def test_cli_errors_are_one_line(runs, tmp_path, runner):
    cases = {("--host", "0.0.0.0"): "--allow-remote", ("--study", "pairwise"): "--judgements"}
    for args, said in cases.items():
        result = runner.invoke(cli, ["view", *args, str(runs[0])])
        assert result.exit_code == 1 and said in result.stderr and result.stderr.count("\n") == 1, result.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "question": "q"}\n{"id": "b", "question": \n')
    result = runner.invoke(cli, ["view", str(bad)])
    assert result.exit_code == 1 and f"{bad} line 2" in result.stderr and result.stderr.count("\n") == 1
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a"}\n{"id": "a"}\n')
    assert "ids must be unique" in runner.invoke(cli, ["view", str(dup)]).stderr
    packed = tmp_path / "run.jsonl.gz"
    packed.write_bytes(gzip.compress(runs[0].read_bytes()))
    assert "gunzip it first" in runner.invoke(cli, ["view", str(packed)]).stderr


def test_cq_view_prints_its_address_and_serves(runs):
    proc = subprocess.Popen([sys.executable, "-m", "cqtools", "view", "--port", "0", str(runs[0])],
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
    try:
        line = proc.stderr.readline()
        address = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert address, line
        assert "a.jsonl (7 records)" in line
        assert get(address.group(0))[0] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_remote_binding_warns(runs):
    proc = subprocess.Popen([sys.executable, "-m", "cqtools", "view", "--host", "0.0.0.0", "--allow-remote",
                             "--port", "0", str(runs[0])], stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
    try:
        assert "warning: listening on 0.0.0.0, not localhost" in proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_record_whose_metrics_fail_still_shows(tmp_path, monkeypatch, caplog, capsys):
    from cqtools.view import index

    good = steps()["gen-cq-llm"][0]
    real = index.contributions

    def failing(record):  # as a gold or prediction no metric function can read would
        if record["id"] == "odd":
            raise TypeError("unreadable gold")
        return real(record)

    monkeypatch.setattr(index, "contributions", failing)
    path = tmp_path / "odd.jsonl"
    path.write_bytes(orjson.dumps(dict(good, id="odd")) + b"\n" + orjson.dumps(good) + b"\n")
    with serving([path]) as (base, viewer):
        run = viewer.runs[0]
        assert run.metrics_done == 2 and run.metrics[0] == {} and run.metrics[1]
        assert get(base + "/record/0")[0] == 200 and get(base + "/")[0] == 200
    # cq's own stderr handler once a command ran in this process (it stops propagation), else caplog's
    assert "record odd: no metrics (unreadable gold)" in caplog.text + capsys.readouterr().err


def test_a_run_changed_under_the_viewer_is_a_500_page_not_a_traceback(runs):
    with serving([runs[0]]) as (base, viewer):
        runs[0].write_bytes(b"")  # truncated after it was indexed
        status, _, body = get(base + "/record/1")
    assert status == 500 and "start cq view again" in body
