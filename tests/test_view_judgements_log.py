"""`cq view --study --judgements FILE` never cuts what it did not write (a run, notes, a hand-merged log
without its final newline), refuses what keeps no judgement (/dev/null, a FIFO: no hang, a directory), and
checks the study on every append, so two servers of different studies cannot share one new file."""
import errno
import os
import subprocess
import sys

import orjson
import pytest

from cqtools.cli import cli
from cqtools.errors import InputError
from cqtools.view.study import JudgementLog

from .view_helpers import post, serving, write_runs
from .test_view_study import form


@pytest.fixture
def runs(tmp_path):
    return write_runs(tmp_path)


def unterminated(path, text: bytes) -> bytes:
    path.write_bytes(text.rstrip(b"\n"))
    return path.read_bytes()


def test_a_run_or_notes_given_as_judgements_are_refused_untouched(runs, tmp_path, runner):
    run = tmp_path / "run.jsonl"
    before = unterminated(run, runs[0].read_bytes())
    result = runner.invoke(cli, ["view", "--port", "0", "--study", "clam-turns", "--judgements", str(run), str(run)])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
    assert run.read_bytes() == before  # 6fba24f: its last record was cut off
    notes = tmp_path / "notes.txt"
    before = unterminated(notes, b"judged 1-20\nto do: the rest")
    result = runner.invoke(cli, ["view", "--port", "0", "--study", "clam-turns", "--judgements", str(notes),
                                 str(runs[0])])
    assert result.exit_code == 1 and f"{notes} line" in result.stderr and result.stderr.count("\n") == 1
    assert notes.read_bytes() == before


def test_a_torn_tail_is_refused_not_cut(tmp_path):
    path = tmp_path / "judged.jsonl"
    before = unterminated(path, b'{"annotator": "ann", "item": "x1"}\n{"annotator": "ann", "ite')
    with pytest.raises(InputError, match="line 2: the last line has no newline"):
        JudgementLog(str(path))
    assert path.read_bytes() == before


def test_a_hand_merged_log_keeps_every_judgement(runs, tmp_path):
    log = tmp_path / "merged.jsonl"
    rows = [{"annotator": name, "item": "fx01", "study": "clam-turns"} for name in ("ann", "bob", "cy")]
    before = unterminated(log, b"".join(orjson.dumps(r) + b"\n" for r in rows))
    with serving(runs[:1], "clam-turns", log) as (base, viewer):
        assert viewer.study.log.judged("cy") == {"fx01"}  # 6fba24f: cy's judgement was cut
        item = viewer.study.items[1]
        good = dict(annotator="dee", item=item, cq_right="yes", user_right="yes", answer_right="no")
        assert post(base + "/judge", form(**good))[0] == 303
    kept = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert log.read_bytes().startswith(before + b"\n") and len(kept) == 4 and kept[3]["annotator"] == "dee"


@pytest.mark.parametrize("kind", ["/dev/null", "fifo", "directory"])
def test_what_keeps_no_judgement_is_refused_without_a_hang(runs, tmp_path, kind):
    target = {"/dev/null": "/dev/null", "fifo": str(tmp_path / "fifo"), "directory": str(tmp_path)}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    cmd = [sys.executable, "-m", "cqtools", "view", "--port", "0", "--study", "clam-turns", "--judgements", target,
           str(runs[0])]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)  # 6fba24f: a FIFO hung here
    assert done.returncode == 1 and "not a regular file" in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_two_servers_of_different_studies_cannot_share_one_new_file(runs, tmp_path):
    log = tmp_path / "new.jsonl"
    with serving(runs, "pairwise", log) as (base_a, a), serving(runs[:1], "clam-turns", log) as (base_b, b):
        assert post(base_a + "/judge", form(annotator="ann", item=a.study.items[0], label="equal"))[0] == 303
        turns = dict(annotator="ann", item=b.study.items[0], cq_right="yes", user_right="yes", answer_right="yes")
        status, _, body = post(base_b + "/judge", form(**turns))
        assert status == 500 and "another study (pairwise)" in body  # 6fba24f: 303, both studies in one file
    assert [orjson.loads(line)["study"] for line in log.read_bytes().splitlines()] == ["pairwise"]


def test_a_failed_append_takes_back_only_its_own_bytes(tmp_path, monkeypatch):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(b'{"annotator": "ann", "item": "x1"}\n')
    log = JudgementLog(str(path))

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(InputError, match="No space left on device.*nothing of it was kept"):
        log.append({"annotator": "bob", "item": "x1"})
    assert path.read_bytes() == b'{"annotator": "ann", "item": "x1"}\n'
