"""gzip wherever a file is read or written, -o/--output (all or nothing), --resume on a .gz file."""
import gzip
import io
import os
import signal
import subprocess
import sys
import time

import pytest

from cqtools.cli import cli
from cqtools.jsonl import maybe_gunzip, read_records, repair_output, scan_output

from .conftest import FIXTURES, ROOT, jsonl, parse_jsonl

ARGS = ["--hits", "2", "--threads", "1"]


def retrieve(runner, index, text, *args):
    return runner.invoke(cli, ["retrieve", "--index", index, *ARGS, *args], input=text)


@pytest.fixture(scope="module")
def full(fixture_index, questions_text):
    from click.testing import CliRunner

    result = retrieve(CliRunner(), fixture_index, questions_text)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _leftovers(directory):
    return [p for p in os.listdir(directory) if ".tmp" in p]


# --- reading gzip: by magic bytes, on stdin too -----------------------------------------------------

class _OneBytePipe(io.RawIOBase):
    """A pipe that delivers one byte per read: peek(2) gives a single byte."""

    def __init__(self, data):
        self.data = data

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk, self.data = self.data[:1], self.data[1:]
        buffer[:len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("wrap", [io.BytesIO, lambda b: io.BufferedReader(_OneBytePipe(b))])
@pytest.mark.parametrize("compress", [False, True])
def test_gzip_stdin_is_recognised_by_its_first_bytes(wrap, compress):
    text = b'{"id": "a", "question": "q1"}\n\n{"id": "b", "question": "q2"}\n'
    stream = wrap(gzip.compress(text) if compress else text)
    assert [r["id"] for _, r in read_records(stream)] == ["a", "b"]
    assert maybe_gunzip(wrap(b"")).read() == b""


def test_gzip_stdin_through_a_stage(runner, fixture_index, questions_text, full):
    result = runner.invoke(cli, ["retrieve", "--index", fixture_index, *ARGS],
                           input=gzip.compress(questions_text.encode()))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == full


def test_a_gzip_input_cut_short_is_one_line_and_keeps_what_came_before(runner, fixture_index, questions):
    data = gzip.compress(jsonl(questions * 40).encode())
    result = retrieve(runner, fixture_index, data[: len(data) // 2], "--batch-size", "4")
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "cut short or damaged" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    out = parse_jsonl(result.stdout)
    assert 0 < len(out) < 1200 and [r["id"] for r in out] == [q["id"] for q in (questions * 40)[:len(out)]]


def test_dpr_tsv_gz_and_gzip_under_any_name(runner, tmp_path):
    plain = FIXTURES / "formats" / "psgs_w100.tsv"
    expected = runner.invoke(cli, ["convert", "dpr", str(plain)]).stdout
    for name in ("psgs_w100.tsv.gz", "psgs_w100.tsv"):  # the second: gzip without the .gz name
        path = tmp_path / name
        path.write_bytes(gzip.compress(plain.read_bytes()))
        result = runner.invoke(cli, ["convert", "dpr", str(path)])
        assert result.exit_code == 0, result.stderr
        assert result.stdout == expected and len(parse_jsonl(expected)) == 8


def test_passages_and_questions_jsonl_gz(runner, tmp_path):
    for fmt, src in (("passages", FIXTURES / "corpus.jsonl"), ("ambignq", FIXTURES / "ambignq_light.json")):
        expected = runner.invoke(cli, ["convert", fmt, str(src)]).stdout
        path = tmp_path / (src.name + ".gz")
        path.write_bytes(gzip.compress(src.read_bytes()))
        result = runner.invoke(cli, ["convert", fmt, str(path)])
        assert result.exit_code == 0, result.stderr
        assert result.stdout == expected


@pytest.mark.parametrize("damage, what", [
    (lambda data: gzip.compress(data.replace(b"Jupiter", b"Jupit\xe9r")), "line 3: not UTF-8 text"),
    (lambda data: gzip.compress(data * 50)[:400], "cut short or damaged"),
])
def test_a_bad_corpus_file_is_one_line(runner, tmp_path, damage, what):
    path = tmp_path / "psgs_w100.tsv.gz"
    path.write_bytes(damage((FIXTURES / "formats" / "psgs_w100.tsv").read_bytes()))
    result = runner.invoke(cli, ["convert", "dpr", str(path)])
    assert result.exit_code == 1 and what in result.stderr, result.stderr
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr


@pytest.mark.heavy(reason="builds a Lucene index (JVM)")
def test_index_reads_a_gzipped_dpr_corpus(runner, tmp_path):
    corpus = tmp_path / "psgs_w100.tsv.gz"
    corpus.write_bytes(gzip.compress((FIXTURES / "formats" / "psgs_w100.tsv").read_bytes()))
    built = runner.invoke(cli, ["index", "--corpus", str(corpus), "--out", str(tmp_path / "idx"), "-q"])
    assert built.exit_code == 0, built.stderr
    found = runner.invoke(cli, ["retrieve", "--index", str(tmp_path / "idx"), "--hits", "1"],
                          input='{"id": "q", "question": "largest planet"}\n')
    assert parse_jsonl(found.stdout)[0]["passages"][0]["title"] == "Jupiter"


# --- -o/--output: all or nothing ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz"])
def test_output_file_equals_stdout(runner, fixture_index, questions_text, full, tmp_path, name):
    out = tmp_path / "sub" / name
    result = retrieve(runner, fixture_index, questions_text, "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    data = out.read_bytes()
    assert data.startswith(b"\x1f\x8b") == name.endswith(".gz")
    assert (gzip.decompress(data) if name.endswith(".gz") else data).decode() == full
    assert not _leftovers(out.parent)


def test_a_failed_run_leaves_no_half_file(runner, fixture_index, questions, tmp_path):
    out = tmp_path / "out.jsonl.gz"
    out.write_bytes(b"previous")
    text = jsonl(questions[:5]) + "{broken\n" + jsonl(questions[5:8])
    result = retrieve(runner, fixture_index, text, "--batch-size", "2", "-o", str(out))
    assert result.exit_code == 1 and "line 6" in result.stderr and result.stderr.strip().count("\n") == 0
    assert out.read_bytes() == b"previous"  # untouched, not half a new file
    assert not _leftovers(tmp_path)
    fresh = tmp_path / "fresh.jsonl"
    retrieve(runner, fixture_index, text, "-o", str(fresh))
    assert not fresh.exists() and not _leftovers(tmp_path)


def test_output_may_name_the_input(runner, fixture_index, questions_text, full, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(questions_text)
    with open(path, "rb") as fh:
        proc = subprocess.run([sys.executable, "-m", "cqtools", "retrieve", "--index", fixture_index, *ARGS,
                               "-o", str(path)], stdin=fh, capture_output=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr.decode()
    assert path.read_text() == full


def test_output_and_resume_exclude_each_other(runner, fixture_index, questions_text, tmp_path):
    result = retrieve(runner, fixture_index, questions_text, "-o", str(tmp_path / "a"), "--resume", str(tmp_path / "b"))
    assert result.exit_code == 2 and "-o/--output and --resume" in result.stderr
    assert not os.listdir(tmp_path)


def test_convert_and_merge_take_output(runner, fixture_index, questions_text, full, tmp_path):
    out = tmp_path / "q.jsonl.gz"
    result = runner.invoke(cli, ["convert", "ambignq", str(FIXTURES / "ambignq_light.json"), "-o", str(out)])
    assert result.exit_code == 0 and result.stdout == ""
    assert len(parse_jsonl(gzip.decompress(out.read_bytes()).decode())) == 30
    shards = [str(tmp_path / f"out.{i}.jsonl.gz") for i in range(2)]
    for i, path in enumerate(shards):
        done = retrieve(runner, fixture_index, questions_text, "--shard", f"{i}/2", "--resume", path)
        assert done.exit_code == 0, done.stderr
    merged = tmp_path / "merged.jsonl.gz"
    result = runner.invoke(cli, ["merge", *shards, "-o", str(merged)])
    assert result.exit_code == 0, result.stderr
    assert "no run record" not in result.stderr  # the gzip shards' run records were checked
    assert gzip.decompress(merged.read_bytes()).decode() == full
    bad = runner.invoke(cli, ["merge", shards[1], shards[0], "-o", str(tmp_path / "bad.jsonl")])
    assert bad.exit_code == 1 and not (tmp_path / "bad.jsonl").exists() and not _leftovers(tmp_path)


# --- --resume on a .gz file ----------------------------------------------------------------------------

def test_resume_gz_writes_one_member_per_batch(runner, fixture_index, questions_text, full, tmp_path):
    out = tmp_path / "out.jsonl.gz"
    result = retrieve(runner, fixture_index, questions_text, "--batch-size", "8", "--resume", str(out))
    assert result.exit_code == 0, result.stderr
    assert gzip.decompress(out.read_bytes()).decode() == full
    assert out.read_bytes().count(b"\x1f\x8b\x08") >= 4  # 30 records in batches of 8: four members
    again = retrieve(runner, fixture_index, questions_text, "--batch-size", "8", "--resume", str(out))
    assert again.exit_code == 0 and gzip.decompress(out.read_bytes()).decode() == full


@pytest.mark.parametrize("tear", ["cut", "garbage", "cut-after-member"])
def test_a_torn_gzip_tail_is_read_as_far_as_it_decompresses_and_rewritten(runner, fixture_index, questions_text,
                                                                          full, tmp_path, tear):
    out = tmp_path / "out.jsonl.gz"
    assert retrieve(runner, fixture_index, questions_text, "--batch-size", "10", "--resume", str(out)).exit_code == 0
    data = out.read_bytes()
    last = data.rindex(b"\x1f\x8b\x08")  # the third member: records 21-30
    torn = {"cut": data[: last + (len(data) - last) * 2 // 3], "garbage": data + b"\x00\x17junk",
            "cut-after-member": data[:last] + data[last:last + 5]}[tear]
    out.write_bytes(torn)
    count, good_end, recovered = scan_output(str(out))
    assert good_end <= last + (len(data) - last if tear == "garbage" else 0)
    assert 20 <= count <= 30 and full.startswith(gzip.decompress(torn[:good_end]).decode() + recovered.decode())
    result = retrieve(runner, fixture_index, questions_text, "--batch-size", "10", "--resume", str(out))
    assert result.exit_code == 0, result.stderr
    assert gzip.decompress(out.read_bytes()).decode() == full


def test_repair_keeps_the_lines_a_torn_member_still_gives(tmp_path):
    path = tmp_path / "out.jsonl.gz"
    lines = [b'{"id": "%d"}\n' % n for n in range(200)]
    member = gzip.compress(b"".join(lines[100:]), mtime=0)
    path.write_bytes(gzip.compress(b"".join(lines[:100]), mtime=0) + member[: len(member) - 12])
    count, good_end, recovered = scan_output(str(path))
    assert 100 < count < 200 and recovered.endswith(b"\n")
    repair_output(str(path), good_end, recovered)
    assert gzip.decompress(path.read_bytes()) == b"".join(lines[:count])
    assert scan_output(str(path)) == (count, path.stat().st_size, b"")


def test_kill_then_resume_a_gzip_output(fixture_index, questions, tmp_path, runner):
    many = jsonl({**q, "id": f"{q['id']}-{n}"} for n in range(20) for q in questions)
    args = ["retrieve", "--index", fixture_index, *ARGS, "--batch-size", "1"]
    expected = runner.invoke(cli, args, input=many).stdout
    src = tmp_path / "in.jsonl.gz"
    src.write_bytes(gzip.compress(many.encode()))
    out = tmp_path / "out.jsonl.gz"
    cmd = [sys.executable, "-m", "cqtools", *args, "--resume", str(out)]

    def records_so_far():
        return scan_output(str(out))[0] if out.exists() else 0

    with open(src, "rb") as fin:
        proc = subprocess.Popen(cmd, stdin=fin, stderr=subprocess.DEVNULL, cwd=ROOT)
        deadline = time.time() + 120
        while time.time() < deadline and records_so_far() < 40:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert 40 <= records_so_far() < 600, "the run was not interrupted midway"
    with open(src, "rb") as fin:
        done = subprocess.run(cmd, stdin=fin, capture_output=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr.decode()
    assert gzip.decompress(out.read_bytes()).decode() == expected


@pytest.mark.parametrize("compress", [False, True])
def test_a_named_pipe_is_read_without_rewinding(runner, tmp_path, compress):
    """`cq convert ... --ids <(cut -f1 list)` hands cq a FIFO: it cannot seek back after the gzip
    sniff, so it is peeked (this was a traceback)."""
    import gzip as gz
    import threading

    from cqtools.jsonl import open_input

    fifo = tmp_path / "ids"
    os.mkfifo(fifo)
    payload = b"a\nb\n"

    def write():
        with open(fifo, "wb") as fh:
            fh.write(gz.compress(payload) if compress else payload)

    writer = threading.Thread(target=write)
    writer.start()
    with open_input(str(fifo)) as fh:
        assert fh.read() == payload
    writer.join()
