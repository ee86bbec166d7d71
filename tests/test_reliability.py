"""Nothing silently wrong (issue 26): one writer per --resume output, SIGTERM/SIGHUP clean up like
Ctrl-C and later runs remove a dead run's leftovers, a torn chat log is repaired. Real processes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from .conftest import ROOT, jsonl

CQ = [sys.executable, "-m", "cqtools"]
RECORDS = [{"id": f"r{i}", "question": f"Question number {i}?"} for i in range(6)]


STARTED: list = []


def start(*args, cwd):
    """A cq process reading its records from a pipe we hold open (so it waits for more); killed at the
    end of the test whatever happens (the fixture below)."""
    proc = subprocess.Popen([*CQ, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=cwd)
    STARTED.append(proc)
    return proc


@pytest.fixture(autouse=True)
def _no_process_left():
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def wait_for(predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def dead_pid() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def test_a_second_resume_on_one_output_is_refused(tmp_path):
    out = tmp_path / "out.jsonl"
    first = start("detect", "--method", "never", "--batch-size", "1", "--resume", str(out), cwd=tmp_path)
    first.stdin.write(jsonl(RECORDS[:1]).encode())
    first.stdin.flush()
    assert wait_for(lambda: lines(out) == 1), "the first run wrote nothing"
    second = subprocess.run([*CQ, "detect", "--method", "never", "--resume", str(out)], input=jsonl(RECORDS).encode(),
                            capture_output=True, cwd=tmp_path)
    assert second.returncode == 1
    assert f"being written by another cq process (pid {first.pid})" in second.stderr.decode()
    assert b"Traceback" not in second.stderr and lines(out) == 1
    first.stdin.write(jsonl(RECORDS[1:]).encode())
    first.stdin.close()
    assert first.wait(60) == 0
    assert [orjson.loads(x)["id"] for x in out.read_bytes().splitlines()] == [r["id"] for r in RECORDS]
    again = subprocess.run([*CQ, "detect", "--method", "never", "--resume", str(out)], input=jsonl(RECORDS).encode(),
                           capture_output=True, cwd=tmp_path)  # the lock died with the first process
    assert again.returncode == 0, again.stderr
    assert lines(out) == len(RECORDS)


def test_sigterm_and_sighup_clean_up_like_ctrl_c(tmp_path):
    for sig in (signal.SIGTERM, signal.SIGHUP):
        out = tmp_path / f"out-{sig}.jsonl"
        proc = start("detect", "--method", "never", "--batch-size", "1", "-o", str(out), cwd=tmp_path)
        proc.stdin.write(jsonl(RECORDS[:2]).encode())
        proc.stdin.flush()
        temp = tmp_path / f".{out.name}.tmp{proc.pid}"
        assert wait_for(temp.exists), "no -o temp file appeared"
        time.sleep(0.5)
        proc.send_signal(sig)
        assert proc.wait(60) == 128 + sig
        assert b"Traceback" not in proc.stderr.read()
        assert not out.exists() and not list(tmp_path.glob(f".{out.name}.tmp*")), list(tmp_path.iterdir())


def test_sigterm_leaves_no_half_per_record_file(tmp_path):
    rows = tmp_path / "rows.jsonl"
    records = [{**r, "ambiguity": {"label": False, "score": 0.0}, "gold": {"ambiguous": False}} for r in RECORDS]
    proc = start("score", "--task", "detect", "--batch-size", "1", "--per-record", str(rows), cwd=tmp_path)
    proc.stdin.write(jsonl(records[:3]).encode())
    proc.stdin.flush()
    assert wait_for(lambda: list(tmp_path.glob(".rows.jsonl.tmp*")), 15), "no --per-record temp file appeared"
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 128 + signal.SIGTERM
    assert not rows.exists() and not list(tmp_path.glob(".rows.jsonl.tmp*"))


def test_a_later_run_removes_a_dead_runs_leftovers_only(tmp_path):
    dead, alive = dead_pid(), os.getpid()
    stale = tmp_path / f".out.jsonl.tmp{dead}"
    live = tmp_path / f".out.jsonl.tmp{alive}"
    stale.write_text("half")
    live.write_text("someone is writing this")
    result = subprocess.run([*CQ, "detect", "--method", "never", "-o", "out.jsonl"], input=jsonl(RECORDS).encode(),
                            capture_output=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not stale.exists() and live.exists() and lines(tmp_path / "out.jsonl") == len(RECORDS)


def test_index_leftovers_of_a_dead_build_are_removed(tmp_path):
    from cqtools.jsonl import remove_stale

    dead = dead_pid()
    for name in (f".idx.building-{dead}-abc", f".idx.old-{dead}-xyz", f".idx.building-{os.getpid()}-mine"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "segment").write_text("x")
    removed = remove_stale(str(tmp_path), r"^\.idx\.(?:building|old)-(\d+)-")
    assert sorted(Path(p).name for p in removed) == [f".idx.building-{dead}-abc", f".idx.old-{dead}-xyz"]
    assert (tmp_path / f".idx.building-{os.getpid()}-mine").exists()


def test_a_torn_chat_log_is_repaired_before_new_turns(tmp_path):
    from cqtools.chat import TurnLog, read_log

    log_path = tmp_path / "session.jsonl"
    log_path.write_bytes(orjson.dumps({"id": "t1", "question": "q1"}) + b"\n" + b'{"id": "t2", "quest')
    turns = TurnLog(str(log_path))
    turns.write({"id": "t3", "question": "q3"})
    turns.close()
    assert [r["id"] for r in read_log(str(log_path))] == ["t1", "t3"]


def test_records_with_bad_ids_or_a_bom_are_never_dropped(tmp_path):
    """A byte-order mark before line 1 is no part of the record; a float, object or boolean id is a bad
    record: written through with errors.detect under --on-error skip, the run's stop otherwise."""
    lines_in = [b"\xef\xbb\xbf" + orjson.dumps({"id": "a", "question": "q?"}),
                orjson.dumps({"id": 1.5, "question": "q?"}), orjson.dumps({"id": {"x": 1}, "question": "q?"}),
                orjson.dumps({"id": True, "question": "q?"}), orjson.dumps({"id": 7, "question": "q?"})]
    data = b"\n".join(lines_in) + b"\n"
    skip = subprocess.run([*CQ, "detect", "--method", "never", "--on-error", "skip"], input=data, capture_output=True,
                          cwd=tmp_path)
    assert skip.returncode == 0, skip.stderr
    out = [orjson.loads(x) for x in skip.stdout.splitlines()]
    assert [r["id"] for r in out] == ["a", 1.5, {"x": 1}, True, "7"]
    assert [("errors" in r, "ambiguity" in r) for r in out] == [(False, True), (True, False), (True, False),
                                                                (True, False), (False, True)]
    assert "got a number with a fraction (1.5)" in out[1]["errors"]["detect"]
    fail = subprocess.run([*CQ, "detect", "--method", "never"], input=data, capture_output=True, cwd=tmp_path)
    assert fail.returncode == 1 and len(fail.stdout.splitlines()) == 1
    assert "line 2: 'id' must be a string or an integer, got a number with a fraction (1.5)" in fail.stderr.decode()


def test_an_api_outage_under_skip_stops_the_run_and_resume_redoes_the_rest(tmp_path):
    """A server that fails after its retries is no record's fault: the run stops with a one-line
    error (records written stay), and --resume later answers the rest; no record is an error record."""
    from .test_openai_backend import Server

    server = Server([sys.executable, "-m", "tests.openai_server"])
    try:
        server.control(reset=True, reply=" Which year: 2001 or 2002?", faults=["pass", "pass"] + ["500"] * 40)
        out = tmp_path / "out.jsonl"
        env = {**os.environ, "CQ_API_KEY": "sk-test", "CQ_API_RETRIES": "1", "CQ_API_BACKOFF": "0.01",
               "CQ_CACHE": str(tmp_path / "cache")}
        args = [*CQ, "gen-cq", "--method", "llm", "--all", "--model", "openai:fake", "--api-base", server.url,
                "--on-error", "skip", "--batch-size", "1", "--concurrency", "1", "--resume", str(out)]
        stdin = jsonl(RECORDS)
        first = subprocess.run(args, input=stdin.encode(), capture_output=True, env=env, cwd=ROOT)
        assert first.returncode == 1, first.stderr
        last = first.stderr.decode().strip().splitlines()[-1]
        assert last.startswith("cq gen-cq: error: ") and "HTTP 500 after 1 retries" in last
        assert "Traceback" not in first.stderr.decode()
        assert [r["id"] for r in map(orjson.loads, out.read_bytes().splitlines())] == ["r0", "r1"]
        assert len(server.requests()) == 4  # two answers, then one failing request and its retry: no more
        server.control(reset=True, faults=[])
        again = subprocess.run(args, input=stdin.encode(), capture_output=True, env=env, cwd=ROOT)
        assert again.returncode == 0, again.stderr
        done = [orjson.loads(line) for line in out.read_bytes().splitlines()]
        assert [r["id"] for r in done] == [r["id"] for r in RECORDS]
        assert not any("errors" in r for r in done) and all(r["cq"]["text"] for r in done)
    finally:
        server.stop()


def test_output_file_keeps_its_mode_and_a_symlink_is_written_through(tmp_path):
    stdin = jsonl(RECORDS[:2]).encode()
    private = tmp_path / "private.jsonl"
    private.write_text("old\n")
    os.chmod(private, 0o600)
    link = tmp_path / "link.jsonl"
    target = tmp_path / "target.jsonl"
    target.write_text("old\n")
    link.symlink_to(target)
    for out in (private, link):
        done = subprocess.run([*CQ, "detect", "--method", "always", "-o", str(out)], input=stdin,
                              capture_output=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
    assert oct(os.stat(private).st_mode & 0o777) == oct(0o600) and lines(private) == 2
    assert link.is_symlink() and lines(target) == 2


# --- item 10: score --on-error skip, and the skip warning ------------------------------------------------

def _score(task, records, *flags):
    from click.testing import CliRunner

    from cqtools.cli import cli

    return CliRunner().invoke(cli, ["score", "--task", task, "--format", "json", *flags], input=jsonl(records))


GOLD = {"answers": [["Heath Ledger"]]}


@pytest.mark.parametrize("task,key,bad", [("retrieval", "passages", "oops"), ("cbqa", "answers", "oops"),
                                          ("retrieval", "passages", ["not an object"])])
def test_score_skip_counts_a_malformed_prediction_as_missing(task, key, bad):
    good = {"passages": [{"id": "p", "title": "t", "text": "Heath Ledger played him"}],
            "answers": [{"text": "Heath Ledger"}]}
    records = [{"id": "a", "question": "q", "gold": GOLD, key: good[key]},
               {"id": "b", "question": "q", "gold": GOLD, key: bad}]
    failed = _score(task, records)
    assert failed.exit_code == 1 and f"record b: '{key}' must be" in failed.stderr
    skipped = _score(task, records, "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.stderr
    assert f"record b: '{key}' must be" in skipped.stderr and "scored as a missing prediction" in skipped.stderr
    summary = orjson.loads(skipped.stdout)
    assert summary["n"] == 2 and summary["missing"] == 1  # counted, as a missing prediction, never dropped
    assert any("malformed prediction" in note for note in summary["notes"])


def test_score_ignores_the_shape_of_what_its_task_does_not_read():
    records = [{"id": "a", "question": "q", "gold": {"ambiguous": True}, "ambiguity": {"label": True, "score": 1.0},
                "passages": "not read by detect"}]
    result = _score("detect", records)
    assert result.exit_code == 0, result.stderr


def test_a_record_written_through_under_skip_is_named_on_stderr(tmp_path):
    done = subprocess.run([*CQ, "detect", "--method", "always", "--on-error", "skip", "-q"],
                          input=jsonl([{"id": "a", "question": "Who?"}, {"id": "b", "question": None}]).encode(),
                          capture_output=True, cwd=tmp_path)
    assert done.returncode == 0
    assert "line 2: 'question' must be a string, got null (record b): written through unchanged" in done.stderr.decode()
    out = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in out] == ["a", "b"] and "errors" in out[1]


def test_merge_of_redirected_shards_names_the_shard_a_lost_record_would_be_in(tmp_path):
    from click.testing import CliRunner

    from cqtools.cli import cli

    records = [{"id": f"r{i}", "question": f"Q{i}?"} for i in range(7)]
    paths = []
    for i in range(3):
        shard = CliRunner().invoke(cli, ["detect", "--method", "always", "--shard", f"{i}/3"], input=jsonl(records))
        path = tmp_path / f"out.{i}.jsonl"
        path.write_text(shard.stdout)
        paths.append(str(path))
    lines = Path(paths[0]).read_text().splitlines(keepends=True)
    Path(paths[0]).write_text("".join(lines[:-1]))  # shard 0 lost its last record (input record 7)
    merged = CliRunner().invoke(cli, ["merge", *paths])
    assert merged.exit_code == 0 and len(merged.stdout.splitlines()) == 6  # indistinguishable from a 6-record input ...
    assert f"if the input had more, {paths[0]} is short (it would hold input record 7)" in merged.stderr  # ... but named


# --- item 9: no tracebacks left ---------------------------------------------------------------------------

def test_a_cut_gzip_input_is_a_one_line_error_naming_the_file(tmp_path):
    import gzip

    from click.testing import CliRunner

    from cqtools.cli import cli

    whole = gzip.compress((ROOT / "fixtures" / "corpus.jsonl").read_bytes())
    cut = tmp_path / "corpus.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    for args in (["convert", "passages", str(cut)], ["index", "--corpus", str(cut), "--out", str(tmp_path / "i")]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1 and not isinstance(result.exception, EOFError), result.exception
        assert f"{cut}: the gzip data is cut short or damaged" in result.stderr, result.stderr
        assert "Aborted" not in result.stderr
    assert not (tmp_path / "i").exists()


@pytest.mark.parametrize("content", ["[1, 2]", '{"command": "detect", "params": [1]}', "{not json"])
def test_a_run_record_of_the_wrong_shape_is_a_one_line_error(tmp_path, content):
    out = tmp_path / "out.jsonl"
    out.write_text(jsonl(RECORDS[:1]))
    (tmp_path / "out.jsonl.cq.json").write_text(content)
    done = subprocess.run([*CQ, "detect", "--method", "always", "--resume", str(out)], input=jsonl(RECORDS).encode(),
                          capture_output=True, cwd=tmp_path)
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert b"out.jsonl.cq.json is not a cq run record" in done.stderr


def test_two_index_builds_into_one_new_directory_one_wins_the_other_says_so(tmp_path):
    target = tmp_path / "idx"
    cmd = [*CQ, "index", "--corpus", str(ROOT / "fixtures" / "corpus.jsonl"), "--out", str(target), "-q"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path) for _ in range(2)]
    outcomes = [(p.wait(timeout=300), p.stderr.read().decode()) for p in procs]
    assert sorted(rc for rc, _ in outcomes) in ([0, 0], [0, 1])  # both may finish one after the other
    for rc, stderr in outcomes:
        assert "Traceback" not in stderr
        if rc:  # lost the race at the swap, or started after the other had finished
            assert (f"another `cq index` finished into {target} while this one was building" in stderr
                    or "already exists and is not empty" in stderr), stderr
    assert (target / "cq_index.json").exists()
    assert [n for n in os.listdir(tmp_path) if n != "idx"] == []  # no build directory left


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_a_one_line_error(tmp_path):
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*CQ, "detect", "--method", "always"], input=jsonl(RECORDS).encode(), stdout=full,
                              stderr=subprocess.PIPE, cwd=tmp_path)
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert b"no space left on device" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_o_writes_into_a_pipe_and_never_replaces_it(tmp_path):
    import threading

    done = subprocess.run([*CQ, "detect", "--method", "always", "-o", "/dev/stdout"], input=jsonl(RECORDS).encode(),
                          capture_output=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [orjson.loads(line)["id"] for line in done.stdout.splitlines()] == [r["id"] for r in RECORDS]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    done = subprocess.run([*CQ, "detect", "--method", "always", "-o", str(fifo)], input=jsonl(RECORDS).encode(),
                          capture_output=True, cwd=tmp_path, timeout=120)
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(got[0].splitlines()) == len(RECORDS)
    import stat

    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the pipe, not a file renamed over it


# --- item 6: a question the size of a document ---------------------------------------------------------------

def test_a_question_over_the_limit_is_refused_before_any_model_reads_it(tmp_path):
    huge = {"id": "huge", "question": "Who played the Joker " * 300}  # 6,300 characters
    records = [RECORDS[0], huge]
    done = subprocess.run([*CQ, "detect", "--method", "always"], input=jsonl(records).encode(),
                          capture_output=True, cwd=tmp_path)
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert b"line 2: 'question' has 6300 characters, over the limit of 4000" in done.stderr
    assert len(done.stdout.splitlines()) == 1  # the record before it was written
    skipped = subprocess.run([*CQ, "detect", "--method", "always", "--on-error", "skip"], input=jsonl(records).encode(),
                             capture_output=True, cwd=tmp_path)
    out = [orjson.loads(line) for line in skipped.stdout.splitlines()]
    assert skipped.returncode == 0 and "over the limit" in out[1]["errors"]["detect"] and "ambiguity" not in out[1]
    raised = subprocess.run([*CQ, "detect", "--method", "always"], input=jsonl(records).encode(), capture_output=True,
                            cwd=tmp_path, env={**os.environ, "CQ_MAX_QUESTION_CHARS": "10000"})
    assert raised.returncode == 0 and len(raised.stdout.splitlines()) == 2


# --- issue 25: silent empties ------------------------------------------------------------------------------

def test_empty_input_says_so_and_a_terminal_on_stdin_gets_a_hint(tmp_path):
    done = subprocess.run([*CQ, "detect", "--method", "always"], input=b"", capture_output=True, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b""
    assert b"0 records on standard input" in done.stderr
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([*CQ, "detect", "--method", "always"], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    os.close(slave)
    STARTED.append(proc)
    os.write(master, b'{"id": "a", "question": "Who?"}\n\x04')  # a typed record, then Ctrl-D
    out, err = proc.communicate(timeout=120)
    os.close(master)
    assert proc.returncode == 0, err
    assert b"reading JSONL records from the terminal" in err and b"Ctrl-D" in err
    assert orjson.loads(out.splitlines()[0])["id"] == "a"
