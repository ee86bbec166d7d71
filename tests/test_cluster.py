"""cq under a real scheduler: a one-node SLURM (tests/slurm_cluster.py) started by `make test-cluster`.

The tests marked ``cluster`` drive the real sbatch, srun and scontrol: docs/cluster.md's array script
and its merge, a task requeued mid-run, a task started twice on one output, a two-stage pipeline as
dependent jobs, and a slice of `make compare` with SLURM=1. `make test` leaves them out (-m "not
cluster"); the dry-run test of SLURM=1's plan runs there.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from .conftest import ROOT, SHARED, jsonl, parse_jsonl
from .conftest_models import bm25_index  # noqa: F401 (BM25 only: the dense half of bm25_index took 16 of its 20 s)
from .slurm_cluster import LocalSlurm, missing_programs, sbatch_wait
from .test_docs_run import BLOCKS, DocRun, doc_env, substitute
from .test_train_resume import still_classifier  # noqa: F401 (a tiny BERT without dropout)

VENV_BIN = str(Path(sys.executable).parent)
cluster = pytest.mark.cluster


@pytest.fixture(scope="module")
def slurm():
    if os.environ.get("CQ_TEST_CLUSTER") != "1":
        pytest.skip("needs the local SLURM of `make test-cluster` (CQ_TEST_CLUSTER=1)")
    if missing_programs() or os.geteuid() != 0:
        pytest.fail(f"make test-cluster needs root and SLURM: missing {missing_programs()}")
    local = LocalSlurm(ROOT / "work" / "slurm")
    try:
        local.start()
        yield local
    finally:
        killed = local.stop()
        assert not killed, f"daemons that had to be killed: {killed}"


def env_of(slurm: LocalSlurm) -> dict:
    return {**slurm.env(), "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", "OMP_NUM_THREADS": "1",
            "CQ_ORT_THREADS": "1"}


def sbatch(slurm: LocalSlurm, cwd: Path, *args: str, wait: bool = False) -> str:
    """Submit; returns the job id (sbatch --parsable). With wait, returns once every task has ended."""
    proc = slurm.run("sbatch", "--parsable", *(["--wait"] if wait else []), *args, cwd=cwd, env=env_of(slurm),
                     check=False, timeout=600)
    job = proc.stdout.strip().split(";")[0]
    print(f"sbatch {' '.join(args)} -> job {job} (exit {proc.returncode})")
    assert job.isdigit(), proc.stderr
    return job


def job_field(slurm: LocalSlurm, job: str, field: str) -> str:
    out = slurm.run("scontrol", "show", "job", job, check=False).stdout
    m = re.search(rf"\b{field}=(\S*)", out)
    return m.group(1) if m else ""


def wait_for(what, timeout: float = 120, every: float = 0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = what()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s")


def start_now(slurm: LocalSlurm, job: str) -> str:
    """The job's state; a requeued job pending for its begin time (SLURM sets it 120 s ahead) is told to
    start now. Asked again while it pends: an update that reaches the controller before the requeue is
    overwritten by it (seen: the restart then waited the 120 s)."""
    state = job_field(slurm, job, "JobState")
    if state == "PENDING":
        slurm.run("scontrol", "update", f"JobId={job}", "StartTime=now", check=False)
    return state


def lines(data: bytes) -> int:
    return data.count(b"\n")


def cq(*args: str, stdin: Path, cwd: Path) -> bytes:
    """An unsharded, unscheduled run: what a cluster run must equal byte for byte."""
    with open(stdin, "rb") as fin:
        proc = subprocess.run([f"{VENV_BIN}/cq", *args], stdin=fin, capture_output=True, cwd=cwd,
                              env={**os.environ, "OMP_NUM_THREADS": "1", "CQ_ORT_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


@cluster
def test_docs_array_script_through_sbatch_then_merge(slurm, tmp_path, tiny_causal, bm25_index):
    """docs/cluster.md's SLURM array script (two tasks, the tiny model on CPU) through `sbatch --wait`,
    then its `cq merge` block: the merged file equals one unsharded `cq answer`, byte for byte."""
    doc = "docs/cluster.md"
    env = {**doc_env(tiny_causal, tmp_path / "scratch"), **env_of(slurm), "CQ_TEST_SLURM": "1"}
    (tmp_path / "doc").mkdir()
    run = DocRun(doc, tmp_path / "doc", env, {"tiny_llm": tiny_causal, "index": bm25_index})
    array, merge = [b for b in BLOCKS if b.doc == doc][:2]
    assert "#SBATCH --array" in array.text and "cq merge" in merge.text
    submitted = run.run(array)
    assert submitted.returncode == 0, submitted.stderr
    job = re.search(r"job (\d+)", submitted.stdout).group(1)
    print(f"docs/cluster.md array script: sbatch --wait -> job {job}")
    assert job_field(slurm, job, "JobState") == "COMPLETED" and job_field(slurm, job, "ArrayTaskId") in ("0-1", "0", "1")
    merged = run.run(merge)
    assert merged.returncode == 0, merged.stderr
    one = cq("answer", "--mode", "cq", "--model", tiny_causal, "--device", "cpu", "--dtype", "bfloat16",
             stdin=run.workdir / "work/with_cq.jsonl", cwd=run.workdir)  # the script's command, unsharded
    assert (run.workdir / "work/answered.jsonl").read_bytes() == one
    print(f"merge of job {job}'s 2 shards == unsharded run: {len(one)} bytes, {lines(one)} records")


@cluster
def test_docs_encoding_array_through_sbatch_then_index_equals_one_process(slurm, tmp_path, bm25_index):
    """docs/cluster.md's `cq encode` array script (two tasks, MiniLM on CPU, the fixture corpus in chunks of 20)
    through `sbatch --wait`, then its `cq index --vectors` block: the index equals one `cq index --dense` process
    (same docid file, bit-equal vectors). Only these two blocks run (not the doc's earlier ones)."""
    import faiss
    import numpy as np

    doc = "docs/cluster.md"
    env = {**doc_env("unused", tmp_path / "scratch"), **env_of(slurm), "CQ_TEST_SLURM": "1"}
    (tmp_path / "doc").mkdir()
    run = DocRun(doc, tmp_path / "doc", env, {"index": bm25_index})
    blocks = [b for b in BLOCKS if b.doc == doc]
    array, merge = next((a, m) for a, m in zip(blocks, blocks[1:]) if "cq encode" in a.text)
    assert "#SBATCH --array" in array.text and "--vectors" in merge.text
    script = substitute(array, run.fills)
    assert "--array=0-1" in script and "--chunk 20" in script and "fixtures/corpus.jsonl" in script
    submitted = sbatch_wait(script, run.workdir, run.env)
    assert submitted.returncode == 0, submitted.stderr
    job = re.search(r"job (\d+)", submitted.stdout).group(1)
    assert job_field(slurm, job, "JobState") == "COMPLETED", submitted.stderr
    vectors = Path(run.env["SCRATCH"]) / "vectors"
    assert sorted(p.name for p in vectors.glob("vectors.*.json")) == ["vectors.0-of-2.json", "vectors.1-of-2.json"]
    merged = run._bash(substitute(merge, run.fills))
    assert merged.returncode == 0, merged.stderr
    padded = "1" if "CQ_PADDED_BATCHES=1" in script else "0"  # the one process encodes as the script's tasks did
    one = subprocess.run([f"{VENV_BIN}/cq", "index", "--corpus", "fixtures/corpus.jsonl", "--out", "one", "--dense",
                          "--device", "cpu", "--chunk", "20", "--threads", "1"], cwd=run.workdir, capture_output=True,
                         text=True, env={**run.env, "OMP_NUM_THREADS": "1", "CQ_PADDED_BATCHES": padded}, timeout=600)
    assert one.returncode == 0, one.stderr
    out = run.workdir / re.search(r"--out (\S+)", merge.text).group(1)
    dense = {name: (path / "dense/docid").read_text() for name, path in (("merged", out), ("one", run.workdir / "one"))}
    assert dense["merged"] == dense["one"] and dense["one"].count("\n") == 155
    got, want = (faiss.read_index(str(path / "dense/index")) for path in (out, run.workdir / "one"))
    got, want = got.reconstruct_n(0, got.ntotal), want.reconstruct_n(0, want.ntotal)
    assert got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32))
    print(f"docs/cluster.md encoding array: job {job} (2 tasks), merged index == one-process index "
          f"({got.shape[0]} vectors of {got.shape[1]}, bit for bit)")


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """20,000 records (the fixture questions with unique ids): a batch-size-1 retrieve of them runs long
    enough to be requeued midway."""
    qs = parse_jsonl((ROOT / "fixtures/questions.jsonl").read_text())
    path = tmp_path_factory.mktemp("many") / "many.jsonl"
    path.write_text(jsonl({**q, "id": f"{q['id']}-{n}"} for n in range(20000 // len(qs) + 1) for q in qs))
    return path


@pytest.fixture(scope="module")
def uninterrupted(bm25_index, many) -> bytes:
    """One unsharded, unscheduled `cq retrieve` of ``many``: what the requeued and the twice-started jobs
    must write, byte for byte (run once for both)."""
    return cq("retrieve", "--index", bm25_index, "--hits", "1", "--batch-size", "1", "--threads", "1",
              stdin=many, cwd=many.parent)


def retrieve_job(index: str, many: Path, out: str) -> str:
    return (f"#!/bin/bash\nset -euo pipefail\n"
            f"cq retrieve --index {index} --hits 1 --batch-size 1 --threads 1 --resume {out} < {many}\n")


@cluster
def test_requeued_task_resumes_nothing_lost_or_duplicated(slurm, tmp_path, bm25_index, many, uninterrupted):
    full = uninterrupted
    (tmp_path / "job.sh").write_text(retrieve_job(bm25_index, many, "out/r.jsonl"))
    job = sbatch(slurm, tmp_path, "--requeue", "--output=r.%j.log", "job.sh")
    out = tmp_path / "out/r.jsonl"
    wait_for(lambda: out.exists() and out.read_bytes().count(b"\n") >= 2000)
    slurm.run("scontrol", "requeue", job)
    at_requeue = out.read_bytes().count(b"\n")
    print(f"scontrol requeue {job} with {at_requeue} of {lines(full)} records written")
    requeued = time.time()
    wait_for(lambda: job_field(slurm, job, "Restarts") == "1", timeout=60)
    # StartTime=now in the same wall-clock second as the kill makes slurmd refuse the launch ("Job credential
    # revoked": the job FAILED before cq started, 2 of 20 runs on 2026-11-26; the lock was never reached):
    # a scheduler's own restart comes 120 s later, so the test waits out that second before asking for one
    time.sleep(max(0.0, int(requeued) + 2 - time.time()))
    wait_for(lambda: start_now(slurm, job) in ("COMPLETED", "FAILED"), timeout=300, every=1)
    log = (tmp_path / f"r.{job}.log").read_text()
    assert job_field(slurm, job, "JobState") == "COMPLETED", log
    print(f"job {job}'s log:\n{log.strip()}")  # "waiting for the cq process that is ending": the restart overlapped
    assert at_requeue < full.count(b"\n"), "the job ended before it was requeued"
    assert out.read_bytes() == full
    ids = [r["id"] for r in parse_jsonl(out.read_text())]
    assert len(ids) == len(set(ids)) == full.count(b"\n")
    print(f"job {job}: requeued once (Restarts=1), resumed, output == uninterrupted run ({len(full)} bytes)")


@cluster
def test_a_task_started_twice_on_one_output(slurm, tmp_path, bm25_index, many, uninterrupted):
    """Two array tasks of one job write the same --resume output at the same time (a task started twice):
    the second stops on the lock with a one-line error naming the first's pid; the first finishes; the
    output is the uninterrupted one, and re-submitting the stopped task recomputes nothing."""
    full = uninterrupted
    (tmp_path / "job.sh").write_text(retrieve_job(bm25_index, many, "out/same.jsonl"))
    job = sbatch(slurm, tmp_path, "--array=0-1", "--cpus-per-task=1", "--output=t.%A_%a.log", "job.sh", wait=True)
    logs = {i: (tmp_path / f"t.{job}_{i}.log").read_text() for i in (0, 1)}
    states = {i: job_field(slurm, f"{job}_{i}", "JobState") for i in (0, 1)}
    print(f"job {job}: task states {states}")
    stopped = [i for i, state in states.items() if state == "FAILED"]
    assert len(stopped) == 1, (states, logs)
    lock_error = [line for line in logs[stopped[0]].splitlines() if line.strip()]
    assert len(lock_error) == 1 and re.search(r"pid \d+", lock_error[0]), logs[stopped[0]]
    print(f"task {stopped[0]}: {lock_error[0]}")
    assert (tmp_path / "out/same.jsonl").read_bytes() == full
    again = sbatch(slurm, tmp_path, f"--array={stopped[0]}", "--output=again.%A_%a.log", "job.sh", wait=True)
    assert job_field(slurm, f"{again}_{stopped[0]}", "JobState") == "COMPLETED"
    assert (tmp_path / "out/same.jsonl").read_bytes() == full


@cluster
def test_two_stages_as_dependent_jobs(slurm, tmp_path, bm25_index, tiny_causal):
    """Stage 1 (retrieve) as a two-task array; stage 2 (merge, then answer) as a job that starts only
    after every stage-1 task succeeded (--dependency=afterok), reading the merged file."""
    src = ROOT / "fixtures/questions.jsonl"
    (tmp_path / "retrieve.sh").write_text(
        "#!/bin/bash\n#SBATCH --array=0-1\nset -euo pipefail\n"
        f"cq retrieve --index {bm25_index} --hits 3 --shard $SLURM_ARRAY_TASK_ID/2 "
        f"--resume out/ret.$SLURM_ARRAY_TASK_ID.jsonl < {src}\n")
    (tmp_path / "answer.sh").write_text(
        "#!/bin/bash\nset -euo pipefail\ncq merge out/ret.0.jsonl out/ret.1.jsonl > ret.jsonl\n"
        f"cq answer --mode single --model {tiny_causal} --device cpu --resume answered.jsonl < ret.jsonl\n")
    first = sbatch(slurm, tmp_path, "--output=ret.%A_%a.log", "retrieve.sh")
    second = sbatch(slurm, tmp_path, f"--dependency=afterok:{first}", "--output=answer.%j.log", "answer.sh",
                    wait=True)
    print(f"stage 1: job {first} (array 0-1); stage 2: job {second}, --dependency=afterok:{first}")
    assert job_field(slurm, second, "JobState") == "COMPLETED", (tmp_path / f"answer.{second}.log").read_text()
    ends = [job_field(slurm, f"{first}_{i}", "EndTime") for i in (0, 1)]
    assert max(ends) <= job_field(slurm, second, "StartTime"), (ends, "stage 2 started before stage 1 ended")
    retrieved = cq("retrieve", "--index", bm25_index, "--hits", "3", stdin=src, cwd=tmp_path)
    assert (tmp_path / "ret.jsonl").read_bytes() == retrieved
    (tmp_path / "one.jsonl").write_bytes(retrieved)
    answered = cq("answer", "--mode", "single", "--model", tiny_causal, "--device", "cpu",
                  stdin=tmp_path / "one.jsonl", cwd=tmp_path)
    assert (tmp_path / "answered.jsonl").read_bytes() == answered


# --- the grid on a cluster: make compare's stages as SLURM jobs (SLURM=1, experiments.mk) ------------

def compare_plan(*args: str) -> str:
    proc = subprocess.run(["make", "-n", "-C", str(ROOT), "compare", *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_slurm_1_runs_every_stage_of_the_grid_through_srun(tmp_path):
    """SLURM=1: every cq stage, score and the index build of `make compare` runs through srun, a model stage
    (one that takes --device) with SLURM_GPU, any other with SLURM_CPU; without it the plan has no srun."""
    where = (f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    local = compare_plan("N=2", *where)
    assert "srun" not in local
    plan = compare_plan("N=2", "SLURM=1", "SLURM_GPU=--gres=gpu:1 --cpus-per-task=8", "SLURM_OPTS=--time=1:00:00",
                        *where)
    heavy = [line for line in plan.splitlines()
             if re.search(r"bin/cq (retrieve|rerank|detect|gen-cq|answer|disambiguate|score|index)\b", line)]
    assert len(heavy) > 50
    for line in heavy:
        assert re.search(r"srun --job-name=cq-\S+ --ntasks=1 --time=1:00:00 ", line), line
        gpu = "--gres=gpu:1 --cpus-per-task=8 " in line
        assert gpu == ("--device" in line.split("srun", 1)[1]), line
    assert local.count("\n") == plan.count("\n")


@cluster
def test_a_slice_of_the_grid_runs_as_slurm_jobs(slurm, tmp_path):
    """`make compare`'s retrieval and detection cells (N=2) with SLURM=1 on the local cluster: each stage a
    job (the controller lists each finished one by name), the scores equal a run without SLURM."""
    if not (SHARED / "ambignq/dev_light.json").exists():
        pytest.skip(f"needs the shared data ({SHARED})")
    cells = ["scores/ambignq.ret.bm25.retrieval.json", "scores/ambignq.det.classifier.json"]
    exp = f"exp-all_2-model_2-asqa_2-toc_1-deep_1"
    common = ["-C", str(ROOT), f"DATA={SHARED}", f"CQ_MODELS={tmp_path}/models", "N=2", "SMOKE_JOBS=1"]
    runs = {}
    for name, extra in (("slurm", ["SLURM=1", "SLURM_GPU=--cpus-per-task=1", "SLURM_CPU=--cpus-per-task=1"]),
                        ("local", [])):
        work = tmp_path / name
        targets = [f"{work}/{exp}/{cell}" for cell in cells]
        proc = subprocess.run(["make", *common, f"WORK={work}", *extra, *targets], capture_output=True, text=True,
                              env=env_of(slurm), timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        # each cell's full command is in its log file (F.log), make's output has one short line per cell
        logged = "".join(log.read_text() for log in work.rglob("*.log"))
        runs[name] = (logged, [Path(t).read_bytes() for t in targets])
    assert runs["slurm"][0].count("srun --job-name=cq-") >= 5, runs["slurm"][0]
    assert runs["slurm"][1] == runs["local"][1]
    jobs = slurm.run("scontrol", "-o", "show", "job").stdout  # finished jobs stay listed MinJobAge=300 s
    for name in ("cq_index.json", "ambignq.ret.bm25.jsonl", "ambignq.det.classifier.jsonl"):
        assert re.search(rf"JobName=cq-{re.escape(name)} .*JobState=COMPLETED", jobs), name
    print(f"grid slice under SLURM=1: {runs['slurm'][0].count('srun --job-name=cq-')} srun jobs, scores == local run")


@cluster
def test_docs_training_script_two_launchers_train_the_model_of_one_process(slurm, tmp_path, still_classifier):
    """docs/cluster.md's two-node training script under the real sbatch and srun, on this one node: its launch line
    as written (one `accelerate launch` per SLURM task, `--num_machines`, `--machine_rank`, the main process's
    address and port), with two tasks standing for the two nodes (one process each, on CPU: gloo over TCP, the
    rendezvous of a multi-node run) and the fixture detect run in place of BART-large. Two launchers at
    `--batch-size 4` train the model of one plain process at `--batch-size 8` (within 1e-6, as two processes
    under one launcher do: tests/test_train_resume.py), and only machine rank 0 writes it."""
    from .slurm_cluster import _free_port
    from .test_train_resume import QUESTIONS, weights

    fenced = re.findall(r"```\w*\n(.*?)```", (ROOT / "docs/cluster.md").read_text(), re.S)
    script = next(text for text in fenced if "--machine_rank" in text)  # a `text` block: not run by test_docs_run
    launch = re.search(r"srun bash -c '(accelerate launch .*?)\s+-m cqtools train", script.replace("\\\n", " "),
                       re.S).group(1)
    assert "--num_machines $SLURM_NNODES" in launch and "--machine_rank $SLURM_NODEID" in launch
    # one node here: a task is a node (SLURM_NTASKS and SLURM_PROCID for SLURM_NNODES and SLURM_NODEID), one CPU
    # process per launcher for 8 GPUs, this machine's address and a free port
    launch = (launch.replace("$SLURM_NNODES", "$SLURM_NTASKS").replace("$SLURM_NODEID", "$SLURM_PROCID")
              .replace("SLURM_NNODES * 8", "SLURM_NTASKS * 1").replace("29500", str(_free_port())))
    assert "SLURM_NNODES" not in launch and "NODEID" not in launch
    train = ["train", "detect", "--model", still_classifier, "--train", QUESTIONS, "--dev", QUESTIONS, "--limit",
             "16", "--dev-limit", "4", "--passages", "0", "--epochs", "2", "--max-steps", "4", "--lr", "1e-3",
             "--seed", "2", "--device", "cpu", "-q"]
    (tmp_path / "train.sh").write_text(
        "#!/bin/bash\nset -euo pipefail\nexport MAIN=127.0.0.1 CQ_OFFLINE=1\n"
        f"srun --ntasks=2 bash -c '{launch} --mixed_precision no --dynamo_backend no "
        f"-m cqtools {' '.join(train)} --batch-size 4 --out two'\n")
    job = sbatch(slurm, tmp_path, "--nodes=1", "--ntasks=2", "--cpus-per-task=1", "--output=train.%j.log", "train.sh",
                 wait=True)
    log = (tmp_path / f"train.{job}.log").read_text()
    assert job_field(slurm, job, "JobState") == "COMPLETED", log[-3000:]
    summaries = [orjson.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert len(summaries) == 1 and summaries[0]["processes"] == 2 and summaries[0]["steps"] == 4, log[-3000:]
    one = subprocess.run([f"{VENV_BIN}/cq", *train, "--batch-size", "8", "--out", "one"], cwd=tmp_path,
                         capture_output=True, text=True, env={**os.environ, "CQ_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
                         timeout=600)
    assert one.returncode == 0, one.stderr
    a, b = weights(str(tmp_path / "one")), weights(str(tmp_path / "two"))
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst < 1e-6
    print(f"docs/cluster.md training launch, 2 SLURM tasks as 2 machines (job {job}): largest weight difference "
          f"from one process {worst:.1e}")
