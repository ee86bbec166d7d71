"""run_stream and apply with a plain fake stage: no model, no index."""
import io

import orjson
import pytest

from cqtools.cli.stream import StreamSpec, run_stream
from cqtools.errors import CQError, InputError

from .conftest import jsonl, parse_jsonl


def upper(records):
    """A stage that names the record it cannot take, after changing the ones before it."""
    for r in records:
        if r.get("bad"):
            raise InputError("cannot take this one", record_id=r["id"])
        r["question"] = r["question"].upper()
        r["seen"] = r.get("seen", 0) + 1
    return records


def anonymous(records):
    """A stage whose error does not say which record caused it."""
    if any(r.get("bad") for r in records):
        raise CQError("something in this batch")
    return [dict(r, done=True) for r in records]


def run(process, records, **spec):
    out = io.BytesIO()
    run_stream(process, StreamSpec(**spec), stdin=io.BytesIO(jsonl(records).encode()), stdout=out)
    return parse_jsonl(out.getvalue().decode())


RECORDS = [{"id": str(n), "question": f"q{n}", **({"bad": True} if n in (2, 5) else {})} for n in range(8)]


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_skip_sets_aside_exactly_the_named_record(batch_size):
    out = run(upper, RECORDS, on_error="skip", batch_size=batch_size, desc="up")
    assert [r["id"] for r in out] == [r["id"] for r in RECORDS]
    for before, after in zip(RECORDS, out):
        if before.get("bad"):
            assert after == {**before, "errors": {"up": "cannot take this one"}}
        else:
            assert after["question"] == before["question"].upper() and after["seen"] == 1  # processed once


@pytest.mark.parametrize("batch_size", [1, 4, 8])
def test_skip_finds_the_record_when_the_stage_does_not_name_it(batch_size):
    out = run(anonymous, RECORDS, on_error="skip", batch_size=batch_size, desc="anon")
    assert [("errors" in r, r.get("done", False)) for r in out] == \
        [(bool(r.get("bad")), not r.get("bad")) for r in RECORDS]


def test_fail_names_the_line_and_keeps_what_came_before():
    out = io.BytesIO()
    with pytest.raises(InputError) as err:
        run_stream(upper, StreamSpec(batch_size=2), stdin=io.BytesIO(jsonl(RECORDS).encode()), stdout=out)
    assert str(err.value) == "line 3: cannot take this one"
    assert [r["id"] for r in parse_jsonl(out.getvalue().decode())] == ["0", "1"]


def test_a_stage_with_a_prefetch_hint_sees_the_next_batch_before_this_one_is_processed():
    calls = []

    def stage(records):
        calls.append(("process", [r["id"] for r in records]))
        return records

    stage.prefetch = lambda records: calls.append(("prefetch", [r["id"] for r in records]))
    out = run(stage, RECORDS[:5], batch_size=2)
    assert [r["id"] for r in out] == ["0", "1", "2", "3", "4"]
    assert calls == [("prefetch", ["2", "3"]), ("process", ["0", "1"]), ("prefetch", ["4"]), ("process", ["2", "3"]),
                     ("process", ["4"])]


def test_reading_ahead_keeps_a_batch_before_a_bad_line_written():
    """The next batch is read early for the hint, but a bad line in it still stops the run only after the
    batch before it was processed and written."""
    stage = lambda records: records  # noqa: E731
    stage.prefetch = lambda records: None
    text = jsonl(RECORDS[:3]) + "{nope\n" + jsonl(RECORDS[4:6])
    out = io.BytesIO()
    with pytest.raises(InputError, match="line 4"):
        run_stream(stage, StreamSpec(batch_size=2), stdin=io.BytesIO(text.encode()), stdout=out)
    assert [r["id"] for r in parse_jsonl(out.getvalue().decode())] == ["0", "1", "2"]


def test_earlier_errors_are_kept():
    records = [{"id": "x", "question": None, "errors": {"retrieve": "earlier"}}]
    out = run(upper, records, on_error="skip", desc="up")
    assert out[0]["errors"] == {"retrieve": "earlier", "up": "'question' must be a string, got null"}


def test_non_object_lines_are_dropped_and_counted(caplog):
    text = jsonl(RECORDS[:2]) + "[1]\n{nope\n" + jsonl(RECORDS[3:4])
    out = io.BytesIO()
    run_stream(upper, StreamSpec(on_error="skip"), stdin=io.BytesIO(text.encode()), stdout=out)
    assert [orjson.loads(x)["id"] for x in out.getvalue().splitlines()] == ["0", "1", "3"]
    assert "skipped 2 malformed line(s)" in caplog.text


def _items(n, fail_after=None):
    for i in range(n):
        if fail_after is not None and i == fail_after:
            raise InputError("line 9: not JSON")
        yield i


def test_a_distributed_round_gives_each_process_a_batch_and_stops_everyone_at_the_end():
    from cqtools.stream.distributed import _read_round

    items = _items(7)
    assert _read_round(items, 3, 2, None) == ([[0, 1], [2, 3], [4, 5]], None)
    assert _read_round(items, 3, 2, None) == ([[6], [], []], None)  # a short batch ends the round
    assert _read_round(items, 3, 2, None) == ([None, None, None], None)  # the end: everyone stops


def test_a_distributed_round_keeps_the_records_before_an_input_error_then_stops():
    from cqtools.stream.distributed import _read_round

    items = _items(9, fail_after=3)
    parts, failure = _read_round(items, 3, 2, None)
    assert parts == [[0, 1], [2], []] and isinstance(failure, InputError)
    assert _read_round(items, 3, 2, failure) == ([None, None, None], failure)  # nothing more is read


def test_a_distributed_round_is_written_in_order_up_to_a_process_failure():
    from cqtools.stream.distributed import _write_round

    class Run:
        def __init__(self):
            self.written = []

        def write(self, payload, n):
            self.written.append((payload, n))

    error = CQError("boom")
    run = Run()
    assert _write_round(run, [[1, 2], [3]], [("ok", ["a", "b"]), ("ok", ["c"])]) is None
    assert _write_round(run, [[4], [5], [6]], [("ok", ["d"]), ("error", error), ("ok", ["f"])]) is error
    assert run.written == [(["a", "b"], 2), (["c"], 1), (["d"], 1)]
