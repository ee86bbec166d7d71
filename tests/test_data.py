"""`cq data get` / `make data` (issue 25): the public data sets from their sources into one data directory,
checksummed, where the Makefile reads them. A local file server (127.0.0.1) serves tiny hand-made
archives under the official file names; nothing here is real data."""
from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import io
import os
import shutil
import socket
import subprocess
import tarfile
import threading
import zipfile
from pathlib import Path

import orjson
import pytest

from cqtools import data
from cqtools.cli import cli
from tests.conftest import ROOT, parse_jsonl

LIGHT = [{"id": "q1", "question": "who wrote the tiny song?",
          "annotations": [{"type": "multipleQAs", "qaPairs": [{"question": "who wrote the words?", "answer": ["Ann"]},
                                                              {"question": "who wrote the tune?", "answer": ["Bo"]}]}]},
         {"id": "q2", "question": "where is the tiny town?", "annotations": [{"type": "singleAnswer", "answer": ["Xy"]}]}]
NQ = [{"id": "n1", "question": "what colour is the tiny door", "answer": ["red", "crimson"]},
      {"id": "n2", "question": "how many tiny steps", "answer": ["3"]}]
ASQA = {"train": {"t1": {"ambiguous_question": "train q?", "question": "train q?", "qa_pairs": [],
                         "annotations": []}},
        "dev": {"q1": {"ambiguous_question": "who wrote the tiny song?", "question": "who wrote the tiny song?",
                       "qa_pairs": [{"question": "who wrote the words?", "short_answers": ["Ann"]},
                                    {"question": "who wrote the tune?", "short_answers": ["Bo"]}],
                       "annotations": [{"long_answer": "Ann wrote the words and Bo the tune.", "knowledge": []}]}}}
CLAMBER = {"question": "which tiny song?", "context": "", "clarifying_question": "The words or the tune?",
           "require_clarification": 1, "category": "LA", "subclass": "polysemy"}
CONDAMBIGQA = {"id": "c1", "question": "how tiny is the door?", "ctxs": [{"title": "Tiny door", "text": "It is small."}],
               "properties": [{"condition": "in inches", "groundtruth": "ten", "citations": []}]}
ALCE = {"sample_id": "s1", "question": "who wrote the tiny song?", "docs": [{"title": "Tiny song", "text": "Ann."}],
        "qa_pairs": [{"question": "who wrote the words?", "short_answers": ["Ann"]}],
        "annotations": [{"long_answer": "Ann wrote it.", "knowledge": []}]}
AMBIGDOCS = {"qid": "d1", "question": "where is Tiny?", "ambiguous_entity": "Tiny",
             "documents": [{"title": "Tiny (town)", "text": "Tiny is in Xy.", "pid": "2", "answer": "Xy"}]}
TSV = "id\ttext\ttitle\n1\tA tiny door is red.\tTiny door\n2\tThe tiny town is Xy.\tTiny town\n"


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buf.getvalue()


def _served_files() -> dict[str, bytes]:
    """The official file names with our own tiny content (archive layouts with a folder and junk)."""
    return {
        "ambignq_light.zip": _zip({"ambignq_light/train_light.json": orjson.dumps(LIGHT[:1]),
                                   "ambignq_light/dev_light.json": orjson.dumps(LIGHT),
                                   "__MACOSX/ambignq_light/._dev_light.json": b"junk"}),
        "ambignq.zip": _zip({"train.json": orjson.dumps(LIGHT[:1]), "dev.json": orjson.dumps(LIGHT)}),
        "nqopen.zip": _zip({"nqopen/train.json": orjson.dumps(NQ[:1]), "nqopen/dev.json": orjson.dumps(NQ)}),
        "ASQA.json": orjson.dumps(ASQA),
        "psgs_w100.tsv.gz": gzip.compress(TSV.encode()),
        "clamber_benchmark.jsonl": orjson.dumps(orjson.dumps(CLAMBER).decode()) + b"\n",
        "mcaqa.json": orjson.dumps([CONDAMBIGQA]),
        "ALCE-data.tar": _tar({"ALCE-data/asqa_eval_gtr_top100.json": orjson.dumps([ALCE]),
                               "ALCE-data/eli5_eval_bm25_top100.json": b"[]"}),
        "test.json": orjson.dumps([AMBIGDOCS]),
        "dev.csv": b"id,question,clarifying_question\nq1,who wrote the tiny song?,Words or tune?\n",
    }


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buf.getvalue()


@pytest.fixture(autouse=True)
def pinned_to_the_served_files(monkeypatch):
    """Data sets pinned to their official file's checksum are pinned to the tiny file served here instead."""
    for name, ds in data.DATASETS.items():
        content = _served_files().get(ds.filename)
        if ds.sha256 is not None and content is not None:
            digest = hashlib.sha256(content).hexdigest()
            monkeypatch.setitem(data.DATASETS, name, data.Dataset(**{**ds.__dict__, "sha256": digest}))
        if ds.git_blob is not None and content is not None:
            blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
            monkeypatch.setitem(data.DATASETS, name, data.Dataset(**{**ds.__dict__, "git_blob": blob}))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """An http.server on 127.0.0.1 serving _served_files(); stopped after the test (or after 120 s)."""
    root = tmp_path / "served"
    root.mkdir()
    for name, content in _served_files().items():
        (root / name).write_bytes(content)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    watchdog = threading.Timer(120, httpd.shutdown)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/files", root
    finally:
        watchdog.cancel()
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


@pytest.fixture
def served_under_files(server):
    """The server's files under /files/ (a mirror is a base URL, not only a host)."""
    url, root = server
    (root / "files").mkdir()
    for path in list(root.iterdir()):
        if path.is_file():
            shutil.copy(path, root / "files" / path.name)
    return url


def _get(runner, *args, env=None):
    return runner.invoke(cli, ["data", "get", *args], env=env or {})


def test_get_puts_every_data_set_where_the_makefile_reads_it(runner, served_under_files, tmp_path):
    root = tmp_path / "data"
    result = _get(runner, *data.names(), "--dir", str(root), "--mirror", served_under_files)
    assert result.exit_code == 0, result.stderr
    done = {r["name"]: r for r in parse_jsonl(result.stdout)}
    assert set(done) == set(data.names()) and {r["action"] for r in done.values()} == {"downloaded"}
    for rel in ["ambignq/train_light.json", "ambignq/dev_light.json", "ambignq/train.json", "ambignq/dev.json",
                "nq_open/dev.jsonl", "asqa/dev.json", "asqa/ASQA.json", "wikipedia/psgs_w100.tsv.gz"]:
        assert (root / rel).is_file(), rel
    assert not list(root.rglob(".*part-*"))
    # the readers the Makefile runs take them as they are
    light = parse_jsonl(runner.invoke(cli, ["convert", "ambignq", str(root / "ambignq/dev_light.json")]).stdout)
    assert [r["id"] for r in light] == ["q1", "q2"] and light[0]["gold"]["ambiguous"] is True
    for fmt, rel in [("clamber", "clamber/clamber_benchmark.jsonl"), ("condambigqa", "condambigqa/mcaqa.json"),
                     ("alce-asqa", "alce/asqa_eval_gtr_top100.json"), ("ambigdocs", "ambigdocs/test.json"),
                     ("ambignq-cq", "ambignq_cq/dev.csv")]:
        converted = runner.invoke(cli, ["convert", fmt, str(root / rel)])
        assert converted.exit_code == 0 and len(parse_jsonl(converted.stdout)) == 1, (fmt, converted.output)
    asqa = parse_jsonl(runner.invoke(cli, ["convert", "asqa", str(root / "asqa/dev.json")]).stdout)
    assert [r["id"] for r in asqa] == ["q1"] and asqa[0]["gold"]["ambiguous"] is True  # dev split only
    assert parse_jsonl((root / "nq_open/dev.jsonl").read_text()) == NQ
    nq = parse_jsonl(runner.invoke(cli, ["convert", "nq-open", str(root / "nq_open/dev.jsonl")]).stdout)
    assert nq[0]["gold"]["answers"] == [["red", "crimson"]]
    from cqtools.data.formats import iter_corpus

    assert [p["title"] for p in iter_corpus(str(root / "wikipedia/psgs_w100.tsv.gz"))] == ["Tiny door", "Tiny town"]
    # every file written is in SHA256SUMS, in sha256sum's format
    sums = data.read_sums(str(root))
    assert sums["ambignq/ambignq_light.zip"] == data.sha256_of(str(root / "ambignq/ambignq_light.zip"))
    assert {"ambignq/dev_light.json", "asqa/dev.json", "nq_open/dev.jsonl", "wikipedia/psgs_w100.tsv.gz"} <= set(sums)
    if shutil.which("sha256sum"):
        assert subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=root).returncode == 0
    # a second get downloads nothing: everything is there and checked
    again = _get(runner, *data.names(), "--dir", str(root), "--mirror", "http://127.0.0.1:9/nowhere")
    assert again.exit_code == 0, again.stderr
    assert {r["action"] for r in parse_jsonl(again.stdout)} == {"present"}


def test_a_damaged_file_is_refused_on_the_next_get(runner, served_under_files, tmp_path):
    root = tmp_path / "data"
    assert _get(runner, "ambignq-light", "--dir", str(root), "--mirror", served_under_files).exit_code == 0
    dev = root / "ambignq" / "dev_light.json"
    dev.write_bytes(dev.read_bytes().replace(b"Ann", b"Anne"))
    result = _get(runner, "ambignq-light", "--dir", str(root), "--mirror", served_under_files)
    assert result.exit_code != 0 and "Traceback" not in result.output
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("cq data: error:") and str(dev) in error and "SHA256SUMS" in error
    assert "delete it and run cq data get ambignq-light again" in error


def test_a_pinned_checksum_that_does_not_match_keeps_nothing(runner, served_under_files, tmp_path, monkeypatch):
    pinned = data.Dataset(**{**data.DATASETS["asqa"].__dict__, "sha256": "0" * 64})
    monkeypatch.setitem(data.DATASETS, "asqa", pinned)
    root = tmp_path / "data"
    result = _get(runner, "asqa", "--dir", str(root), "--mirror", served_under_files)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "refused, nothing kept" in result.stderr and "0" * 64 in result.stderr
    assert not [p for p in root.rglob("*") if p.is_file()]
    # the right pin is accepted, and get reports the file as pinned
    right = data.sha256_of(str(tmp_path / "served" / "ASQA.json"))
    monkeypatch.setitem(data.DATASETS, "asqa", data.Dataset(**{**pinned.__dict__, "sha256": right}))
    result = _get(runner, "asqa", "--dir", str(root), "--mirror", served_under_files)
    assert result.exit_code == 0, result.stderr
    files = {f["path"]: f for f in parse_jsonl(result.stdout)[0]["files"]}
    assert files["asqa/ASQA.json"] == {"path": "asqa/ASQA.json", "sha256": right, "pinned": True}


def test_a_file_pinned_by_its_git_blob_id_is_checked_as_git_names_it(runner, served_under_files, tmp_path,
                                                                      monkeypatch):
    """AMBIGNQ-CQ is pinned by the blob id its commit's tree names: the id is git's own (git hash-object), a
    download with another is refused and nothing kept, and the right one is reported pinned."""
    served = tmp_path / "served" / "dev.csv"
    if shutil.which("git"):
        named = subprocess.run(["git", "hash-object", str(served)], capture_output=True, text=True, check=True)
        assert data.git_blob_of(str(served)) == named.stdout.strip()
    assert data.DATASETS["ambignq-cq"].url.endswith("/20c4d285d6fdc085e556c1ecd030a713e55338b2/data/dev.csv")
    wrong = data.Dataset(**{**data.DATASETS["ambignq-cq"].__dict__, "git_blob": "0" * 40})
    monkeypatch.setitem(data.DATASETS, "ambignq-cq", wrong)
    root = tmp_path / "data"
    result = _get(runner, "ambignq-cq", "--dir", str(root), "--mirror", served_under_files)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "git blob id" in result.stderr and "refused, nothing kept" in result.stderr
    assert not [p for p in root.rglob("*") if p.is_file()]
    monkeypatch.setitem(data.DATASETS, "ambignq-cq",
                        data.Dataset(**{**wrong.__dict__, "git_blob": data.git_blob_of(str(served))}))
    result = _get(runner, "ambignq-cq", "--dir", str(root), "--mirror", served_under_files)
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["files"][0]["pinned"] is True


def _refused_url() -> str:
    with socket.socket() as sock:  # a port nobody listens on: the connection is refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_offline_one_line_error_names_the_url_and_the_directory(runner, tmp_path):
    root = tmp_path / "data"
    mirror = _refused_url()
    result = _get(runner, "ambignq-light", "--dir", str(root), env={"CQ_DATA_MIRROR": mirror})
    assert result.exit_code == 1 and result.stdout == "" and "Traceback" not in result.output
    lines = result.stderr.splitlines()  # what it tried, then one line saying what to do
    errors = [line for line in lines if line.startswith("cq data: error:")]
    # besides the error, at most the "downloading" info line (absent when an earlier -q run in this process
    # left cq's logger at WARNING)
    others = [line for line in lines if line not in errors]
    assert len(errors) == 1 and len(others) <= 1 and all(o.startswith("cq: downloading") for o in others), result.stderr
    assert f"{mirror}/ambignq_light.zip" in errors[0] and f"{root / 'ambignq'}/" in errors[0]
    assert "put ambignq_light.zip in" in errors[0]
    assert not [p for p in root.rglob("*") if p.is_file()]  # no .part left behind


def test_a_file_placed_by_hand_is_used_without_download(runner, tmp_path):
    root = tmp_path / "data"
    (root / "nq_open").mkdir(parents=True)
    (root / "nq_open" / "nqopen.zip").write_bytes(_served_files()["nqopen.zip"])
    result = _get(runner, "nq-open", "--dir", str(root), "--mirror", _refused_url())
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["action"] == "placed"
    assert parse_jsonl((root / "nq_open" / "dev.jsonl").read_text()) == NQ
    assert "nq_open/nqopen.zip" in data.read_sums(str(root))


def test_data_sets_already_there_are_left_as_they_are(runner, tmp_path):
    """A directory filled before cq data existed (this project's ../shared/data) is read, never written."""
    root = tmp_path / "data"
    (root / "ambignq").mkdir(parents=True)
    for name in ("train_light.json", "dev_light.json"):
        (root / "ambignq" / name).write_bytes(orjson.dumps(LIGHT))
    result = _get(runner, "ambignq-light", "--dir", str(root), "--mirror", _refused_url())
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["action"] == "present"
    assert sorted(p.name for p in root.rglob("*") if p.is_file()) == ["dev_light.json", "train_light.json"]


def test_unknown_name_and_list(runner, tmp_path):
    result = _get(runner, "ambignq-light", "squad", "--dir", str(tmp_path))
    assert result.exit_code == 1 and "unknown data set 'squad'" in result.stderr
    assert not list(tmp_path.iterdir())  # checked before the first download
    listed = parse_jsonl(runner.invoke(cli, ["data", "list", "--dir", str(tmp_path)]).stdout)
    assert [d["name"] for d in listed] == data.names()
    light = listed[0]
    assert light["url"] == "https://nlp.cs.washington.edu/ambigqa/data/ambignq_light.zip"
    assert light["dir"] == str(tmp_path / "ambignq") and light["sha256"] is None


def test_default_directory_is_cq_data_else_the_user_cache(runner, tmp_path, monkeypatch):
    from cqtools.config import data_root

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CQ_DATA", raising=False)
    assert data_root() == f"{tmp_path}/.cache/cqtools/data"
    monkeypatch.setenv("CQ_DATA", str(tmp_path / "mine"))
    assert parse_jsonl(runner.invoke(cli, ["data", "list"]).stdout)[0]["dir"] == str(tmp_path / "mine" / "ambignq")


# --- the Makefile reads the directory cq data get fills ----------------------------------------------

def _clone(tmp_path: Path) -> Path:
    """The Makefile in a directory with no ../shared/data beside it (a user's clone)."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("Makefile", "experiments.mk", "setup.cfg", "pyproject.toml"):
        shutil.copy(ROOT / name, clone / name)
    return clone


def _plan(where: Path, *args: str, home: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("CQ_DATA", "MAKEFLAGS", "MAKELEVEL")}
    proc = subprocess.run(["make", "-n", "-C", str(where), *args, "STAMP="], capture_output=True, text=True,
                          timeout=60, env={**env, "HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_data_and_the_experiments_read_one_directory(runner, served_under_files, tmp_path):
    clone, home = _clone(tmp_path), tmp_path / "home"
    cache = home / ".cache" / "cqtools" / "data"
    targets = ["data", "work/train.jsonl", "exp/asqa.jsonl", "exp/ambignq.jsonl", "EXP=exp"]
    plan = _plan(clone, *targets, home=home)
    assert f"cq data get ambignq-light asqa nq-open --dir {cache}" in plan
    # what make data fetches is what the experiments read
    assert _get(runner, "ambignq-light", "asqa", "nq-open", "--dir", str(cache),
                "--mirror", served_under_files).exit_code == 0
    for rel in ("ambignq/train_light.json", "asqa/dev.json", "ambignq/dev_light.json"):
        assert f"{cache}/{rel}" in plan and (cache / rel).is_file(), rel
    # DATA= or CQ_DATA= choose another directory
    assert f"--dir {tmp_path}/d\n" in _plan(clone, *targets, f"DATA={tmp_path}/d", home=home)
    assert f"convert ambignq {tmp_path}/e/ambignq/train_light.json" in _plan(clone, *targets, f"CQ_DATA={tmp_path}/e",
                                                                             home=home)
    assert "DATA_SETS=psgs-w100" in (ROOT / "Makefile").read_text()


@pytest.mark.skipif(not (ROOT.parent / "shared" / "data").is_dir(), reason="no ../shared/data beside this checkout")
def test_this_checkout_still_reads_shared_data(tmp_path):
    plan = _plan(ROOT, f"{tmp_path}/w/train.jsonl", f"WORK={tmp_path}/w", home=tmp_path)
    assert "convert ambignq ../shared/data/ambignq/train_light.json" in plan


# --- psgs-w100: an HTML page or a cut download is not recorded as the corpus (issue 36, item 10) ------

@pytest.mark.parametrize("content, said", [
    (b"<!DOCTYPE html><html><body>Access denied</body></html>\n", "is not gzip"),
    (gzip.compress(TSV.encode() * 200)[:-30], "is cut short or damaged"),
    (gzip.compress(b"<html>not the passages</html>\n"), "does not start with DPR's header line"),
], ids=["html", "cut", "other-gzip"])
def test_a_psgs_w100_that_is_not_dprs_file_is_refused(runner, server, tmp_path, content, said):
    url, served = server
    (served / "files").mkdir()
    (served / "files" / "psgs_w100.tsv.gz").write_bytes(content)
    root = tmp_path / "data"
    result = _get(runner, "psgs-w100", "--dir", str(root), "--mirror", url)
    assert result.exit_code == 1 and said in result.stderr and "refused, nothing kept" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("cq data: error:") and "Traceback" not in result.output
    assert not [p for p in root.rglob("*") if p.is_file()]
    (root / "wikipedia").mkdir(parents=True, exist_ok=True)  # the same file placed by hand: refused, left where it is
    (root / "wikipedia" / "psgs_w100.tsv.gz").write_bytes(content)
    placed = _get(runner, "psgs-w100", "--dir", str(root), "--mirror", _refused_url())
    assert placed.exit_code == 1 and said in placed.stderr and "placed by hand, left as it is" in placed.stderr
    assert not os.path.exists(root / data.SUMS)
