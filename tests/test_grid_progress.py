"""Issue 37, item 2: `make compare` prints "cell k/N" with the time elapsed and left, and short lines; the full
command and the stage's whole stderr go to the cell's log file (bench/grid/cell.py, experiments.mk)."""
import re
import subprocess
import sys

from .conftest import ROOT

sys.path.insert(0, str(ROOT))

from bench.grid import cell as grid  # noqa: E402


def test_the_cell_line_counts_cells_and_says_the_time_left_from_a_fake_clock():
    line = grid.cell_line(3, 10, started=1000.0, now=1060.0, out="/w/exp/ambignq.det.llm.jsonl",
                          command="CQ_GEN_CACHE=/w/g.sqlite .venv/bin/cq detect --method llm --resume x.part < y")
    # two cells took 60 s: 8 more at 30 s each
    assert line == "cell 3/10  1m00s elapsed, ~4m00s left  ambignq.det.llm.jsonl (cq detect)"
    assert grid.cell_line(1, 147, 1000.0, 1000.5, "a.jsonl", "head -n 5 x > y") == "cell 1/147  0s elapsed  a.jsonl (head)"
    assert grid.cell_line(4, None, None, 5.0, "b.json", "srun --job-name=x .venv/bin/cq score --task detect") \
        == "cell 4  b.json (cq score)"
    assert grid.what(".venv/bin/python -m cqtools detect --method llm < x") == "cq detect"


def test_a_cell_prints_one_short_line_and_logs_its_full_command_and_stderr(tmp_path, capsys):
    out = str(tmp_path / "exp" / "ambignq.det.llm.jsonl")
    log = str(tmp_path / "exp" / "cells.log")
    env = {"PATH": "/usr/bin:/bin", "CQ_GRID_TOTAL": "5", "CQ_GRID_START": "100", "CQ_GRID_LOG": log}
    long_arg = "x" * 400
    command = f"echo 'cq: detect: 1/5 records {long_arg}' >&2; echo '{{\"id\": 1}}' > {out}.part # cq detect {long_arg}"
    clock = iter([160.0, 220.0])
    assert grid.run(out, command, env=env, now=lambda: next(clock)) == 0
    assert grid.run(out + ".next", "true", env=env, now=lambda: next(clock)) == 0
    seen = capsys.readouterr()
    assert seen.out.splitlines() == ["cell 1/5  1m00s elapsed  ambignq.det.llm.jsonl (cq detect)",
                                     "cell 2/5  2m00s elapsed, ~8m00s left  ambignq.det.llm.jsonl.next (true)"]
    assert long_arg not in seen.out + seen.err  # the terminal gets short lines only
    assert seen.err.startswith("  ambignq.det.llm.jsonl: cq: detect: 1/5 records xxx")
    assert all(len(line) <= grid.WIDTH for line in seen.err.splitlines())
    logged = (tmp_path / "exp" / "ambignq.det.llm.jsonl.log").read_text()
    assert logged == f"$ {command}\ncq: detect: 1/5 records {long_arg}\n"
    # a failing cell: its status, and the end of its log on the terminal
    assert grid.run(str(tmp_path / "bad.json"), "echo 'cq: error: line 3: no question' >&2; exit 3", env=env,
                    now=lambda: 300.0) == 3
    err = capsys.readouterr().err
    assert "bad.json failed (exit 3); the end of" in err and err.rstrip().endswith("cq: error: line 3: no question")


def make(*args, timeout=120):
    proc = subprocess.run(["make", "--no-print-directory", "CHECK_CHECKOUT=0", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_make_compare_counts_its_cells_and_echoes_no_full_command(tmp_path):
    where = (f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models", "N=5")
    plan = make("-n", "compare", *where)
    # every cq command of the grid runs through bench/grid/cell.py: make itself echoes none of them
    commands = [line for line in plan.splitlines() if re.search(r"bin/cq (retrieve|rerank|detect|gen-cq|answer|"
                                                               r"disambiguate|oracle|score|index|convert)\b", line)]
    assert len(commands) > 100
    assert all(line.startswith(".venv/bin/python bench/grid/cell.py run ") for line in commands), \
        [line for line in commands if "cell.py run" not in line][:3]
    cells = plan.count("bench/grid/cell.py run ")
    # the total a real run of the goal gets (passed to every cell as CQ_GRID_TOTAL): the same cells, under the
    # same command-line variables (N=5 makes fewer cells than the full grid)
    show = "grid-total: ; @echo total=$$CQ_GRID_TOTAL log=$$CQ_GRID_LOG"
    said = make(f"--eval={show}", "grid-total", "GRID_GOALS=compare", *where)
    assert f"total={cells}" in said and f"log={tmp_path}/w/exp-all_5-model_5-asqa_5-toc_1-deep_1/cells.log" in said
    full = make(f"--eval={show}", "grid-total", "GRID_GOALS=compare", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/m")
    assert int(re.search(r"total=(\d+)", full).group(1)) > cells


def test_the_first_cells_of_the_grid_print_short_lines_and_log_the_command(tmp_path, shared_data):
    exp = tmp_path / "w" / "exp-all_2-model_2-asqa_2-toc_1-deep_1"
    # SERVE=: two cells without a model need no fork server (one would start, and idle for 2 minutes)
    out = make(f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models", f"DATA={shared_data}", "N=2", "SERVE=",
               f"{exp}/covered.ids", f"{exp}/ambignq.jsonl", timeout=300)
    lines = out.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["cell 1", "cell 2"], out
    assert lines[1].endswith("ambignq.jsonl (cq convert)") and all(len(line) < 100 for line in lines)
    logged = (exp / "ambignq.jsonl.log").read_text()
    assert logged.startswith(f"$ .venv/bin/cq convert ambignq {shared_data}/ambignq/dev_light.json --ids {exp}/covered.ids")
    assert len((exp / "ambignq.jsonl").read_text().splitlines()) == 2


def test_a_cell_is_one_process_with_its_wall_time(tmp_path):
    """A cell's timing, run and log are one Python process (issue 43 item 6: it was three: report.py wall start,
    grid.py run, report.py wall stop): `cell.py run F --input IN` writes F.wall, its total adding IN.wall's; a failed
    command writes none."""
    import json
    import os

    upstream = tmp_path / "in.jsonl"
    (tmp_path / "in.jsonl.wall").write_text('{"stage_s": 10.0, "total_s": 10.0, "attempts": 1}')
    out = tmp_path / "out.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQ_GRID")}
    cell = [sys.executable, str(ROOT / "bench" / "grid" / "cell.py"), "run"]
    done = subprocess.run([*cell, "--input", str(upstream), str(out), "--", f"echo x > {out}.part"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    wall = json.loads((tmp_path / "out.jsonl.wall").read_text())
    assert wall["attempts"] == 1 and wall["input"] == str(upstream) and 10.0 <= wall["total_s"] < 15.0
    failed = subprocess.run([*cell, "--input", str(upstream), str(tmp_path / "bad.jsonl"), "--", "exit 4"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert failed.returncode == 4 and not (tmp_path / "bad.jsonl.wall").exists()
    plan = (ROOT / "experiments.mk").read_text()
    assert "report.py wall" not in plan and "$(WALL)" not in plan


def plan_line(out, command):
    return f".venv/bin/python bench/grid/cell.py run --input in.jsonl {out} -- '{command}'"


def test_the_time_left_is_each_cell_kinds_measured_cost(tmp_path, capsys):
    """Issue 48: the ETA counted cells (2 min, then 41 min, for a 50-minute run). Now each planned cell costs the
    mean seconds of the finished cells of its kind (else of all finished cells): one LLM detection took 100 s and
    two scores 2 s each, so 3 more detections, 4 more scores, the score starting now and 2 CQ cells of a kind not
    seen yet (the overall mean, 104 / 3 s) leave 300 + 8 + 2 + 69.3 = 379 s (counting cells: 104 / 3 * 10 = 347)."""
    log, plan = tmp_path / "cells.log", tmp_path / "cells.log.plan"
    detect = ".venv/bin/cq detect --method llm --resume {0}.part < in.jsonl"
    score = ".venv/bin/cq score --task detect < {0} > {0}.json.part"
    gencq = ".venv/bin/cq gen-cq --method from-dqs --all --resume {0}.part < in.jsonl"
    plan.write_text("".join(plan_line(f"d{i}", detect.format(f"d{i}")) + "\n" for i in range(4))
                    + "".join(plan_line(f"s{i}", score.format(f"s{i}")) + "\n" for i in range(7))
                    + "".join(plan_line(f"g{i}", gencq.format(f"g{i}")) + "\n" for i in range(2)))
    lines = []
    for out, what_kind, seconds in (("d0", "cq detect llm", 100), ("s0", "cq score detect", 2),
                                    ("s1", "cq score detect", 2)):
        lines += [f"1000\t{out}\tstart\t{what_kind}\t1000\t0\t0", f"1000\t{out}\tdone\t{what_kind}\t{seconds}\t1\t0\t0"]
    log.write_text("\n".join(lines) + "\n")
    env = {"PATH": "/usr/bin:/bin", "CQ_GRID_TOTAL": "13", "CQ_GRID_START": "1000", "CQ_GRID_LOG": str(log),
           "CQ_GRID_PLAN": str(plan)}
    assert grid.run(str(tmp_path / "s2"), "true # .venv/bin/cq score --task detect", env=env, now=lambda: 1104.0) == 0
    assert capsys.readouterr().out.splitlines() == ["cell 4/13  1m44s elapsed, ~6m19s left  s2 (cq score)"]
    done = log.read_text().splitlines()[-1].split("\t")
    assert done[:4] == ["1000", str(tmp_path / "s2"), "done", "cq score detect"] and float(done[4]) < 60


def test_the_grid_counts_the_cpu_its_cells_and_the_fork_server_used(tmp_path):
    """The fork server's runs escape the cells' rusage (and `time make compare`): each cell logs its own processes'
    CPU and the server's (/proc/PID/stat, its children included), and `cell.py stop` prints the grid's total. Here a
    process standing in for the server burns CPU while a cell sleeps: the cell's own CPU stays near 0, the server's
    share is counted."""
    import os
    import time

    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        socket = tmp_path / "server.sock"
        socket.with_name("server.sock.pid").write_text(f"{burner.pid}\n")
        log = tmp_path / "cells.log"
        env = {"PATH": os.environ["PATH"], "CQ_GRID_START": "7", "CQ_GRID_LOG": str(log), "CQ_SERVER": str(socket)}
        time.sleep(0.2)
        assert grid.run(str(tmp_path / "a"), "sleep 1", env=env) == 0
        burn = f"{sys.executable} -c 'import time; t = time.process_time()\nwhile time.process_time() - t < 0.5: pass'"
        assert grid.run(str(tmp_path / "b"), burn, env=env) == 0
    finally:
        burner.kill()
        burner.wait()
    from bench.grid.eta import grid_cpu

    cpu = grid_cpu(str(log))
    assert cpu["cells"] == 2 and 0.4 < cpu["cells_cpu_s"] < 3 and cpu["server_cpu_s"] > 0.5, cpu
    stop = subprocess.run([sys.executable, str(ROOT / "bench" / "grid" / "cell.py"), "stop"], capture_output=True,
                          text=True, timeout=60, env={"PATH": os.environ["PATH"], "CQ_GRID_LOG": str(log),
                                                      "CQ_GRID_START": "7"})
    assert stop.returncode == 0 and stop.stdout.startswith(f"grid: 2 cells, {cpu['cpu_s']:.0f} CPU s"), stop
