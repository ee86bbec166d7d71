"""`cq view --study`: blind, shuffled judgements from several annotators appended to a JSONL file (a
reload, a crash or two at once lose and duplicate nothing; forged ones refused), and `cq score --task
judgements`'s shares, kappa and sign test, checked against values computed by hand."""
import re
import threading
import urllib.parse

import orjson
import pytest

from cqtools.cli import cli
from cqtools.metrics.agreement import cohen_kappa, fleiss_kappa, sign_test
from cqtools.view.study import JudgementLog

from .conftest import jsonl
from .view_helpers import get, post, serving, write_runs


@pytest.fixture
def runs(tmp_path):
    return write_runs(tmp_path)


def form(**fields) -> bytes:
    return urllib.parse.urlencode(fields).encode()


def shown_item(body: str) -> str:
    import html

    return html.unescape(re.search(r'name="item" value="([^"]*)"', body).group(1))


def judge_all(base: str, name: str, pick) -> list[str]:
    """Walk ``name``'s items as a browser does: fetch the next, post ``pick(item)``; the items in order seen."""
    seen = []
    while True:
        _, _, body = get(base + "/study?annotator=" + urllib.parse.quote(name))
        if "all" in body and "are judged" in body:
            return seen
        item = shown_item(body)
        seen.append(item)
        status, headers, _ = post(base + "/judge", form(annotator=name, item=item, **pick(item)))
        assert status == 303 and headers["Location"] == "/study?annotator=" + urllib.parse.quote(name)


def lines(path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_two_annotators_blind_shuffled_resumable_then_scored(runs, tmp_path, runner):
    log = tmp_path / "judged.jsonl"
    with serving(runs, "pairwise", log, seed=3) as (base, viewer):
        study = viewer.study
        picks = {"ann": lambda item: {"label": "first"}, "bob": lambda item: {"label": "first", "rationale": "ok"}}
        seen = {name: judge_all(base, name, pick) for name, pick in picks.items()}
        assert sorted(seen["ann"]) == sorted(seen["bob"]) == sorted(study.items) and len(study.items) == 6
        assert seen["ann"] != seen["bob"] and seen["ann"] == study.order("ann")  # each their own order
        assert {study.flipped("ann", item) for item in study.items} == {True, False}  # sides shown both ways
        body = get(base + "/study?annotator=ann")[2]
        assert "all 6 items are judged" in body  # a reload after the end shows nothing new
    written = lines(log)
    assert len(written) == 12 and len({(j["annotator"], j["item"]) for j in written}) == 12
    # "first" is whichever side the annotator saw first: the log names the system, from the per-item flip
    for j in written:
        assert j["label"] == j["shown_first"] == ("b" if study.flipped(j["annotator"], j["item"]) else "a")
    result = runner.invoke(cli, ["score", "--task", "judgements"], input=log.read_text())
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    labels = {(j["annotator"], j["item"]): j["label"] for j in written}
    items = sorted(study.items)
    expected = cohen_kappa([labels["ann", i] for i in items], [labels["bob", i] for i in items])
    assert summary["agreement"]["cohen_kappa"] == pytest.approx(expected, abs=1e-4)  # the summary has 4 digits
    assert summary["agreement"]["annotators"] == ["ann", "bob"] and summary["agreement"]["items_all_judged"] == 6
    a_share = sum(1 for j in written if j["label"] == "a") / 12
    assert summary["prefer_a"] == pytest.approx(100 * a_share)


def test_a_restarted_server_resumes_where_each_annotator_stopped(runs, tmp_path):
    log = tmp_path / "judged.jsonl"
    with serving(runs, "askcq-preference", log) as (base, viewer):
        first = shown_item(get(base + "/study?annotator=ann")[2])
        assert post(base + "/judge", form(annotator="ann", item=first, label="equal"))[0] == 303
        # a reload re-posting the same judgement adds nothing
        assert post(base + "/judge", form(annotator="ann", item=first, label="first"))[0] == 409
        order = viewer.study.order("ann")
    with serving(runs, "askcq-preference", log) as (base, viewer):
        assert shown_item(get(base + "/study?annotator=ann")[2]) == order[1]
        assert shown_item(get(base + "/study?annotator=bob")[2]) == viewer.study.order("bob")[0]
    assert [(j["annotator"], j["item"], j["label"]) for j in lines(log)] == [("ann", first, "equal")]


def send_huge(base: str, size: int) -> int:
    """The status of a POST of ``size`` bytes: the server answers from the headers, before reading the body,
    and closes the connection (sending the rest then fails, as a browser's upload would)."""
    import http.client

    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("POST", "/judge")
    conn.putheader("Content-Type", "application/x-www-form-urlencoded")
    conn.putheader("Content-Length", str(size))
    conn.endheaders()
    try:
        conn.send(b"a=" + b"x" * (size - 2))
    except OSError:
        pass
    try:
        return conn.getresponse().status
    finally:
        conn.close()


def test_forged_or_malformed_judgements_are_refused(runs, tmp_path):
    log = tmp_path / "judged.jsonl"
    with serving(runs, "clam-turns", log) as (base, viewer):
        item = viewer.study.items[0]
        good = dict(annotator="ann", item=item, cq_right="yes", user_right="no", answer_right="yes")
        refused = {
            "forged id": (form(**{**good, "item": "not-an-item"}), {}),
            "bad answer": (form(**{**good, "cq_right": "maybe"}), {}),
            "bad name": (form(**{**good, "annotator": "<script>"}), {}),
            "long rationale": (form(**good, rationale="x" * 2001), {}),
            "not a form": (b"\xff\xfe", {}),
            "json": (orjson.dumps(good), {"Content-Type": "application/json"}),
            "other site": (form(**good), {"Origin": "http://evil.example"}),
            "sandboxed page": (form(**good), {"Origin": "null"}),
        }
        statuses = {name: post(base + "/judge", body, headers)[0] for name, (body, headers) in refused.items()}
        assert statuses == {"forged id": 400, "bad answer": 400, "bad name": 400, "long rationale": 400,
                            "not a form": 400, "json": 415, "other site": 403, "sandboxed page": 403}
        assert send_huge(base, 10_000_000) == 413
        assert log.read_bytes() == b""
        assert post(base + "/judge", form(**good))[0] == 303
        assert post(base.replace("http://", "http://") + "/other", form(**good))[0] == 404
    assert lines(log)[0]["judgements"] == {"cq_right": True, "user_right": False, "answer_right": True}


def test_concurrent_annotators_lose_and_duplicate_nothing(runs, tmp_path):
    log = tmp_path / "judged.jsonl"
    with serving(runs, "clam-turns", log) as (base, viewer):
        items = viewer.study.items
        statuses = []

        def annotate(name):
            for item in items * 2:  # every judgement sent twice, as a double click or a reload would
                statuses.append(post(base + "/judge", form(annotator=name, item=item, cq_right="yes",
                                                            user_right="yes", answer_right="no"))[0])

        threads = [threading.Thread(target=annotate, args=(f"a{n}",)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    written = lines(log)
    assert sorted(statuses) == sorted([303] * (6 * len(items)) + [409] * (6 * len(items)))
    assert sorted((j["annotator"], j["item"]) for j in written) == sorted(
        (f"a{n}", item) for n in range(6) for item in items)


def test_a_last_line_without_its_newline_is_kept_not_cut(tmp_path):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(b'{"annotator": "ann", "item": "x1"}\n{"annotator": "ann", "item": "x2"}')  # hand-merged
    log = JudgementLog(str(path))
    assert log.judged("ann") == {"x1", "x2"}
    assert log.append({"annotator": "bob", "item": "x1"})
    assert path.read_bytes() == (b'{"annotator": "ann", "item": "x1"}\n{"annotator": "ann", "item": "x2"}\n'
                                 b'{"annotator":"bob","item":"x1"}\n')


def test_kappa_on_tables_computed_by_hand():
    # Cohen: 10 items, labels y/n. Both y: 4, both n: 3, ann y bob n: 2, ann n bob y: 1.
    # p_o = 7/10; ann y 6/10, bob y 5/10; p_e = .6*.5 + .4*.5 = .5; kappa = (.7 - .5)/(1 - .5) = .4
    ann = ["y"] * 4 + ["n"] * 3 + ["y"] * 2 + ["n"]
    bob = ["y"] * 4 + ["n"] * 3 + ["n"] * 2 + ["y"]
    assert cohen_kappa(ann, bob) == pytest.approx(0.4)
    # Fleiss: 3 raters, 4 items: (a,a,a) (a,a,b) (b,b,b) (a,b,b). P_i = 1, 1/3, 1, 1/3 -> mean 2/3;
    # labels a 6/12, b 6/12 -> P_e = .5; kappa = (2/3 - 1/2)/(1/2) = 1/3
    assert fleiss_kappa([["a"] * 3, ["a", "a", "b"], ["b"] * 3, ["a", "b", "b"]]) == pytest.approx(1 / 3)
    assert cohen_kappa(["y", "y"], ["y", "y"]) is None  # chance agreement 1: undefined
    # sign test: 9 wins, 1 loss: 2 * (1 + 10) / 1024
    assert sign_test(9, 1) == pytest.approx(22 / 1024) and sign_test(0, 0) is None


def test_score_judgements_three_annotators_fleiss_and_paired(runner):
    rows = []
    for item, labels in {"q1": "aab", "q2": "bbb", "q3": "aaa", "q4": "abe"}.items():
        for who, label in zip(("ann", "bob", "cy"), labels):
            rows.append({"id": f"{item}@{who}", "item": item, "annotator": who, "question": "Q?", "study": "pairwise",
                         "label": {"a": "a", "b": "b", "e": "equal"}[label]})
    result = runner.invoke(cli, ["score", "--task", "judgements"], input=jsonl(rows))
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    # items' majorities: q1 a, q2 b, q3 a, q4 a:1 b:1 -> tie; wins a 2, b 1, ties 1
    assert summary["paired"] == {"items": 4, "wins_a": 2, "wins_b": 1, "ties": 1, "win_rate_a": pytest.approx(200 / 3),
                                 "wilson_95": summary["paired"]["wilson_95"], "sign_test_p": 1.0}
    assert summary["agreement"]["fleiss_kappa"] == pytest.approx(
        fleiss_kappa([list("aab"), list("bbb"), list("aaa"), ["a", "b", "equal"]]), abs=1e-4)
    mixed = rows[:1] + [dict(rows[1], study="clam-turns")]
    failed = runner.invoke(cli, ["score", "--task", "judgements"], input=jsonl(mixed))
    assert failed.exit_code == 1 and "score one study at a time" in failed.stderr


def test_a_judgements_file_of_another_study_or_not_judgements_is_refused(runs, tmp_path, runner):
    other = tmp_path / "other.jsonl"
    other.write_text('{"annotator": "ann", "item": "fx01", "study": "clam-turns"}\n')
    result = runner.invoke(cli, ["view", "--study", "pairwise", "--judgements", str(other), str(runs[0]), str(runs[1])])
    assert result.exit_code == 1 and "another study (clam-turns)" in result.stderr and result.stderr.count("\n") == 1
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"annotator": "ann", "item": "fx01", "study": "pairwise"}\nnot json\n')
    result = runner.invoke(cli, ["view", "--study", "pairwise", "--judgements", str(broken), str(runs[0]), str(runs[1])])
    assert result.exit_code == 1 and f"{broken} line 2" in result.stderr and result.stderr.count("\n") == 1
