"""The benchmark scripts (bench/): each starts, every cqtools name it imports exists, and the
cheapest path of each runnable one works on tiny data. bench/grid/report.py reads real `cq score`
summaries of the fixtures; determinism.py and retrieve.py (slow) run at their smallest sizes."""
from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from .conftest import FIXTURES, ROOT

BENCH = ROOT / "bench"
LIBRARIES = {"__init__.py", "common.py", "scale_report.py", "synthetic.py"}  # imported by scripts, not run
# bench/grid's modules the scripts import, not run
GRID_LIBRARIES = {"__init__.py", "cost.py", "eta.py", "floor.py", "pairs.py", "shows.py", "text.py", "wall.py"}
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name not in LIBRARIES) + sorted(
    f"grid/{p.name}" for p in (BENCH / "grid").glob("*.py")
    if p.name not in GRID_LIBRARIES)


def bench(script: str, *args: str, timeout: int = 600, makeflags: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT), "MAKEFLAGS": makeflags})


def cq(*args: str, stdin: str | None = None) -> str:
    out = subprocess.run([sys.executable, "-m", "cqtools", *args], input=stdin, capture_output=True, text=True,
                         cwd=ROOT, check=True)
    return out.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_starts(script):
    result = bench(script, "--help", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:")


@pytest.mark.parametrize("script", SCRIPTS + sorted(LIBRARIES - {"__init__.py"})
                         + sorted(f"grid/{name}" for name in GRID_LIBRARIES - {"__init__.py"}))
def test_every_imported_cqtools_name_exists(script):
    """Names imported inside functions too (the scripts import late): a refactor that moves one breaks
    the benchmark only when it runs, hours in; this finds it now."""
    tree = ast.parse((BENCH / script).read_text())
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("cqtools", "bench",
                                                                                               "tests"):
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)
                        and not _is_submodule(node.module, a.name)]
    assert missing == []


def _is_submodule(package: str, name: str) -> bool:
    try:
        importlib.import_module(f"{package}.{name}")
        return True
    except ImportError:
        return False


def test_report_on_real_score_summaries(tmp_path):
    """Real `cq score --ci` summaries of the fixtures (detect always/never/tree, CQs from the gold DQs) and
    real `cq score --paired` outputs become report rows of `value [low, high]` with n and the cell's wall
    seconds, and sentences that state a difference only when the paired interval excludes 0."""
    records = [orjson.loads(line) for line in (FIXTURES / "questions.jsonl").read_text().splitlines()]
    questions = "".join(orjson.dumps(r).decode() + "\n" for r in records)
    # "tree" counts the record's dqs: given the gold ones, it detects (almost) perfectly.
    with_dqs = "".join(orjson.dumps({**r, "dqs": r["gold"]["dqs"]}).decode() + "\n" for r in records)
    scores, pairs, cells = tmp_path / "scores", tmp_path / "pairs", tmp_path / "cells"
    for d in (scores, pairs, cells):
        d.mkdir()
    for method, stdin in (("always", questions), ("never", questions), ("tree", with_dqs)):
        (cells / f"ambignq.det.{method}.jsonl").write_text(cq("detect", "--method", method, "-q", stdin=stdin))
    (cells / "ambignq.cq.from-dqs.jsonl").write_text(cq("gen-cq", "--method", "from-dqs", "-q", stdin=questions))
    summaries = {}
    for path in sorted(cells.glob("*.jsonl")):
        name, task = path.name[:-len(".jsonl")], "cq" if ".cq." in path.name else "detect"
        summaries[name] = orjson.loads(cq("score", "--task", task, "--ci", *(["--no-bertscore"] * (task == "cq")),
                                          stdin=path.read_text()))
        (scores / f"{name}.json").write_bytes(orjson.dumps(summaries[name]))
        (scores / f"{name}.json.cmd").write_text(f"cq ... | cq score --task {task} --ci\n")
    paired = {}
    for a, b in (("always", "never"), ("always", "tree"), ("tree", "always")):
        name = f"ambignq.det.{a}--ambignq.det.{b}"
        paired[name] = orjson.loads(cq("score", "--task", "detect", "--paired", str(cells / f"ambignq.det.{b}.jsonl"),
                                       stdin=(cells / f"ambignq.det.{a}.jsonl").read_text()))
        (pairs / f"{name}.json").write_bytes(orjson.dumps(paired[name]))

    # Wall times through the real helper: every score reads a stage that took 100 s; det.never's score was
    # killed once after 5 s of work (its last write) and resumed.
    upstream = tmp_path / "upstream.jsonl"
    (tmp_path / "upstream.jsonl.wall").write_text('{"stage_s": 100.0, "total_s": 100.0, "attempts": 1}')
    for name in summaries:
        out = str(scores / f"{name}.json")
        if name == "ambignq.det.never":
            Path(out + ".part.cq.json").write_text("{}")
            Path(out + ".part").write_text("")
            assert bench("grid/report.py", "wall", "start", out).returncode == 0
            started = orjson.loads(Path(out + ".part.attempts").read_bytes())[0][0]
            os.utime(out + ".part", (started + 5, started + 5))
        for args in (("start", out), ("stop", out, str(upstream))):
            result = bench("grid/report.py", "wall", *args)
            assert result.returncode == 0, result.stderr
    never_wall = orjson.loads(Path(scores / "ambignq.det.never.json.wall").read_bytes())
    assert never_wall["attempts"] == 2 and never_wall["resumed"] and 105 <= never_wall["total_s"] < 110
    assert never_wall["jobs"] == 1 and not never_wall["shared"]
    # a stage run under make -j2 is marked, and so is every stage that reads it
    side = str(tmp_path / "side.jsonl")
    assert bench("grid/report.py", "wall", "start", side).returncode == 0
    assert bench("grid/report.py", "wall", "stop", side, str(upstream), makeflags=" -j2 --jobserver-auth=3,4").returncode == 0
    assert bench("grid/report.py", "wall", "start", side + ".next").returncode == 0
    assert bench("grid/report.py", "wall", "stop", side + ".next", side).returncode == 0
    from bench.grid.report import fmt_wall, read_wall
    assert read_wall(side + ".wall")["jobs"] == 2 and fmt_wall(read_wall(side + ".next.wall")).endswith("‡")
    assert not read_wall(side + ".wall")["gen_cache"]
    # a stage that read generations from the grid's cache (cq wrote F.gencache) is marked, and so is
    # every stage that reads it; one that only added to the cache is not; a fresh start forgets old counts
    cached, filled = str(tmp_path / "cached.jsonl"), str(tmp_path / "filled.jsonl")
    for out, counts in ((cached, '{"hits": 3, "added": 1}'), (filled, '{"hits": 0, "added": 9}')):
        assert bench("grid/report.py", "wall", "start", out).returncode == 0
        Path(out + ".gencache").write_text(counts)
        assert bench("grid/report.py", "wall", "stop", out, str(upstream)).returncode == 0
    assert bench("grid/report.py", "wall", "start", cached + ".next").returncode == 0
    assert bench("grid/report.py", "wall", "stop", cached + ".next", cached).returncode == 0
    assert read_wall(cached + ".wall")["gen_cache_hits"] == 3 and fmt_wall(read_wall(cached + ".next.wall")).endswith("§")
    assert not read_wall(filled + ".wall")["gen_cache"] and not fmt_wall(read_wall(filled + ".wall")).endswith("§")
    assert bench("grid/report.py", "wall", "start", cached).returncode == 0 and not Path(cached + ".gencache").exists()

    out = tmp_path / "results.md"
    result = bench("grid/report.py", "results", "--scores", str(scores), "--pairs", str(pairs), "--out", str(out),
                   "--tiers", "30,20,10", "--command", "make compare N=30", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {out} (4 cells)"
    text = out.read_text()
    assert "on 30 covered AmbigNQ dev questions" in text and "on the first 20 of them" in text
    assert "first 10 covered ASQA" in text and "bootstrap 95% interval" in text and "deep reranked pool" not in text
    deep = tmp_path / "results-deep.md"  # a smoke run's deep-pool cells on fewer questions (N_DEEP) say so
    assert bench("grid/report.py", "results", "--scores", str(scores), "--out", str(deep), "--tiers", "30,20,10,1,2",
                 "--command", "make compare N=30 N_DEEP=2", timeout=120).returncode == 0
    assert "on the first 20 of them; the cells that read the deep reranked pool (the AmbigQA, AskCQ and REFUEL " \
           "presets) on the first 2 of those" in deep.read_text()
    rows = {line.split("]")[0].lstrip("| ["): line for line in text.splitlines() if line.startswith("| [")}
    assert set(rows) == set(summaries)
    always = summaries["ambignq.det.always"]
    intervals = always["ci"]["intervals"]
    assert rows["ambignq.det.always"].endswith(
        f"| {always['n']} | " + " | ".join(f"{always[k]:.1f} [{intervals[k][0]:.1f}, {intervals[k][1]:.1f}]"
                                           for k in ("accuracy", "precision", "recall", "f1", "auroc"))
        + f" | {fmt_wall(read_wall(str(scores / 'ambignq.det.always.json.wall')))} |")  # 100 s upstream + its own
    never = fmt_wall(read_wall(str(scores / "ambignq.det.never.json.wall")))
    assert never.endswith("†") and rows["ambignq.det.never"].endswith(f" | {never} |")  # 105 s and more under load
    assert "| cell | preset | n | Acc | P | R | F1 | AUROC | wall s |" in text
    assert all(line.split(" | ")[1] == "cq" for line in rows.values())  # no --preset in these commands
    for line in rows.values():
        assert "–" not in line, line
    assert "## Ambiguity detection" in text and "## Clarification question generation" in text
    assert "cq ... | cq score --task detect --ci" in text  # the command beside each row

    # The prose: a difference only when the interval excludes 0, in the direction of the difference.
    bullets = {line.split("**")[1]: line for line in text.splitlines() if line.startswith("- **")}
    assert set(bullets) == {"ambignq.det.never vs ambignq.det.always", "ambignq.det.tree vs ambignq.det.always",
                            "ambignq.det.always vs ambignq.det.tree"}
    null = paired["ambignq.det.always--ambignq.det.never"]["metrics"]["accuracy"]
    assert not null["excludes_zero"]
    assert (f"accuracy: no difference shown (d = {null['diff']:+.1f} [{null['low']:.1f}, {null['high']:.1f}], "
            f"n = 30).") in bullets["ambignq.det.never vs ambignq.det.always"]
    assert "higher" not in bullets["ambignq.det.never vs ambignq.det.always"]
    shown = paired["ambignq.det.always--ambignq.det.tree"]["metrics"]["accuracy"]
    assert shown["excludes_zero"] and shown["diff"] > 0
    sentence = (f"accuracy: ambignq.det.tree is higher than ambignq.det.always by {shown['diff']:.1f} "
                f"[{shown['low']:.1f}, {shown['high']:.1f}] on 30 shared questions.")
    assert sentence in bullets["ambignq.det.tree vs ambignq.det.always"]
    assert sentence in bullets["ambignq.det.always vs ambignq.det.tree"]  # A and B swapped: the same sentence
    assert "Partial run" not in text

    partial = tmp_path / "partial.md"
    result = bench("grid/report.py", "results", "--scores", str(scores), "--out", str(partial), "--tiers", "30,0,0",
                   "--partial", "stopped after the cheap tier", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "**Partial run** (stopped after the cheap tier)" in partial.read_text()


@pytest.mark.slow
def test_determinism_smallest(tmp_path):
    """One cut (--batch-size 4), a few pairs, two LLM questions, one repeat (about a minute)."""
    out = tmp_path / "determinism.md"
    result = bench("determinism.py", "--out", str(out), "--work", str(tmp_path / "work"), "--cuts", "batch-4",
                   "--pairs", "4", "--llm", "2", "--repeats", "1")
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "batch-4" in text
    results = orjson.loads((tmp_path / "work" / "results.json").read_bytes())
    assert results["table"] and results["speed"]
    assert all(isinstance(row[-1], (int, float)) for row in results["table"] if row[0] == "per-item")
    # padded batches may reorder a near-tie (documented); such a cell says so instead of ending the run
    assert all(isinstance(row[-1], (int, float)) or row[-1] == "text/order" for row in results["table"])


@pytest.mark.slow
def test_retrieve_on_the_fixture_index(tmp_path, shared_data, fixture_index):
    """The shared questions against the fixture index (--reuse-index: no corpus index is built)."""
    out = tmp_path / "retrieve.md"
    result = bench("retrieve.py", "--data", str(shared_data), "--work", str(tmp_path / "work"), "--out", str(out),
                   "--reuse-index", fixture_index)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    for method in ("bm25", "dense", "hybrid", "bm25s"):
        assert f"\n| {method} | " in text


def test_backends_imports_and_reaches_the_llama_server_helper():
    """bench/backends.py reuses the slow tests' llama.cpp server fixture (not started here) and finds
    the concurrency after which throughput stops rising."""
    import inspect

    from bench import backends

    server = backends.llama_server()
    assert inspect.isgenerator(server)
    server.close()
    assert backends.saturation({1: 1.0, 2: 1.02, 4: 1.5}) == 1
    assert backends.saturation({1: 1.0, 2: 1.5, 4: 1.4}) == 2
    assert backends.saturation({1: 1.0, 2: 1.5, 4: 2.0}) == 4
    result = bench("backends.py", "--help", timeout=120)
    assert result.returncode == 0 and "--concurrency" in result.stdout, result.stderr


def test_a_version_runs_its_own_code(tmp_path):
    """Before/after benchmarks run `python -m cqtools` in the version's directory: there its own cqtools
    is imported (PYTHONPATH alone loses to the working directory), and anything else is refused."""
    from bench.common import code_cwd

    assert code_cwd(None) == ROOT
    with pytest.raises(SystemExit, match="imports cqtools from"):
        code_cwd(tmp_path)  # no cqtools there: the installed checkout's would run instead


def test_gpu_comparison_and_render(tmp_path):
    """bench/gpu.py counts records equal to the CPU's exactly, with floats within 1e-3, and with floats
    ignored; renders its page from a work directory without a GPU, keeping the hand-written notes."""
    from bench import gpu

    cpu = [{"id": "1", "ambiguity": {"label": True, "score": 0.6222}, "meta": {"detect": {"device": "cpu"}}},
           {"id": "2", "answers": [{"text": "Canberra"}], "meta": {"detect": {"device": "cpu"}}}]
    near = [{"id": "1", "ambiguity": {"label": True, "score": 0.62221}, "meta": {"detect": {"device": "cuda",
                                                                                            "dtype": "float32"}}},
            {"id": "2", "answers": [{"text": "Canberra"}], "meta": {}}]
    far = [{"id": "1", "ambiguity": {"label": True, "score": 0.625}}, {"id": "2", "answers": [{"text": "Sydney"}]}]
    work = tmp_path / "w"
    work.mkdir()
    for name, records in (("cpu", cpu), ("cuda", near), ("cuda_padded", far)):
        (work / f"detect_llm.{name}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    got = gpu.agreement(work / "detect_llm.cpu.jsonl", work / "detect_llm.cuda.jsonl")
    assert (got["exact"], got["close"], got["text"], got["device"], got["dtype"]) == (1, 2, 2, "cuda", "float32")
    got = gpu.agreement(work / "detect_llm.cpu.jsonl", work / "detect_llm.cuda_padded.jsonl")
    assert (got["exact"], got["close"], got["text"]) == (0, 0, 1)

    (work / "input.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in cpu))
    (work / "device.json").write_text('{"gpu": "G", "machine": "M", "date": "D"}')
    rows = [{"stage": "detect llm", "variant": v, "n": 2, "seconds": s, "startup": 10.0, "per_q": (s - 10.0)}
            for v, s in (("cpu", 16.0), ("cuda", 12.0), ("cuda padded", 10.5))]
    (work / "rows.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = tmp_path / "gpu.md"
    out.write_text("old table\n## What these numbers say\nkept by hand\n")
    result = bench("gpu.py", "--render", "--input", "in.jsonl", "--work", str(work), "--out", str(out))
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "| detect llm | cuda | cuda, float32 | 12.0 | 10.0 | 2.00 | 3.0x | 1/2 | 2/2 | 2/2 |" in page
    assert "| detect llm | cuda padded | ?, ? | 10.5 | 10.0 | < 2.00 |  | 0/2 | 0/2 | 1/2 |" in page  # under noise
    assert page.endswith("## What these numbers say\nkept by hand\n") and "old table" not in page


def test_a_cells_preset_is_read_from_its_pipeline(tmp_path):
    from bench.grid.report import preset_of

    cmd = tmp_path / "c.json.cmd"
    cmd.write_text("# input\n  | cq detect --preset clam --model m\n  | cq gen-cq --preset clam\n  | cq oracle\n")
    assert preset_of(cmd) == "clam"
    cmd.write_text("  | cq detect --method llm\n")
    assert preset_of(cmd) == "cq" and preset_of(tmp_path / "missing.cmd") == "cq"


def test_a_cell_at_the_floor_says_why_from_its_records(tmp_path):
    """Issue 35 item 8: results.md says beside a cell whose headline metric is 0 why, read from the records the
    cell scored (found through its score's F.wall input): a CLAM cell that never asked names its detector's best
    log p(True) against the threshold (another run's records give another number), a cell that answered says how
    many answers none of which was credited; a cell above the floor gets no reason."""
    records = [orjson.loads(line) for line in (FIXTURES / "questions.jsonl").read_text().splitlines()][:6]
    clam_gold = [{**r, "gold": {**r["gold"], "intended": 0}} for r in records if r["gold"].get("answers")]
    cells = {  # name: (task, records)
        "clam.clam": ("clam", [{**r, "ambiguity": {"label": False, "score": -0.9 + i * 0.1, "method": "clam",
                                                   "threshold": -0.3}, "answers": ["Nobody"]}
                               for i, r in enumerate(clam_gold[:5])]),
        "clam.always": ("clam", [{**r, "cq": "Which one?", "answers": [r["gold"]["answers"][0][0]]}
                                 for r in clam_gold[:5]]),
        "ambignq.refuel.preset.ambigqa": ("ambigqa", [{**r, "answers": []} for r in records]),
    }
    scores = tmp_path / "exp" / "scores"
    scores.mkdir(parents=True)
    for name, (task, recs) in cells.items():
        cell = tmp_path / "exp" / f"cell-{name}.jsonl"  # not the grid's naming: found through F.wall's input
        cell.write_text("".join(orjson.dumps(r).decode() + "\n" for r in recs))
        out = str(scores / f"{name}.json")
        Path(out).write_text(cq("score", "--task", task, "--ci", "--n-boot", "50", stdin=cell.read_text()))
        assert bench("grid/report.py", "wall", "start", out).returncode == 0
        assert bench("grid/report.py", "wall", "stop", out, str(cell)).returncode == 0
    page = tmp_path / "results.md"
    result = bench("grid/report.py", "results", "--scores", str(scores), "--out", str(page), timeout=120)
    assert result.returncode == 0, result.stderr
    rows = {line.split("]")[0].lstrip("| ["): line for line in page.read_text().splitlines() if line.startswith("| [")}
    n_clam = len(clam_gold[:5])
    top = max(-0.9 + i * 0.1 for i in range(n_clam))
    assert f"Adj. all: never asked: max log p(True) {top:.2f} ≤ threshold -0.3" in rows["clam.clam"]
    assert f'answers on {n_clam} of {n_clam} records, none credited (e.g. "Nobody"' in rows["clam.clam"]
    assert rows["clam.always"].endswith("|  |")  # above the floor: the column is there, empty
    assert f"no answer on any of {len(records)} records" in rows["ambignq.refuel.preset.ambigqa"]
    assert "| wall s | why at the floor |" in page.read_text()


@pytest.mark.heavy
def test_corpus_scale_at_two_tiny_sizes(tmp_path, shared_data):
    """bench/corpus_scale.py end to end at 2,000 and 4,000 synthetic passages and 40 questions: the rows, the
    goals and the 21M extrapolation are written into the page, whose other sections are kept."""
    out = tmp_path / "scale.md"
    out.write_text("# The papers' corpus at scale\n\n## Another section\n\nkept\n")
    result = bench("corpus_scale.py", "--data", str(shared_data), "--work", str(tmp_path / "work"), "--out", str(out),
                   "--sizes", "2000,4000", "--questions", "40")
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "## Another section\n\nkept" in text
    assert "\n| 2,000 | " in text and "\n| 4,000 | " in text and "(`--bm25-matrix no`)" in text
    assert "21,015,324" in text and "µs × passages" in text
    rows = orjson.loads((tmp_path / "work/rows.json").read_bytes())
    assert [r["size"] for r in rows] == [2000, 4000] and all(r["bm25s_retrieve"]["seconds"] > 0 for r in rows)
    first = (tmp_path / "work/corpus-2000.jsonl").read_text().splitlines()
    assert len(first) == 2000 and orjson.loads(first[0])["id"] == "syn-0"
