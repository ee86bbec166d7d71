"""The grid's AskCQ cell (experiments.mk, ambignq.cqa.preset) takes AskCQ's trained classifier and CQ generator
(issue 55 item 4): MODEL_DETECT_ASKCQ=DIR and MODEL_GENCQ_ASKCQ=DIR put README's `--preset askcq` pipeline in its
plan (`make -n`); unset, the cell's plan is the prompted LLM's, as before."""
import re
import subprocess

from .conftest import ROOT


def make(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "CHECK_CHECKOUT=0", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def _plan(tmp_path, *extra) -> str:
    where = (f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/m", "N=5")
    exp = make(*where, "--eval=show-exp: ; @echo $(EXP)", "show-exp").stdout.strip()
    assert exp.startswith(str(tmp_path))
    done = make("-n", f"{exp}/ambignq.cqa.preset.jsonl", *where, *extra)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _stages(plan: str) -> list[str]:
    """The cq commands of the plan's stages, in order (each stage echoes its command into a .cmd file)."""
    return [" ".join(m.split()) for m in re.findall(r"echo '  \| (cq [^']+)'", plan)]


def test_the_askcq_cell_runs_readmes_pipeline_with_the_trained_classifier_and_generator(tmp_path):
    stages = _stages(_plan(tmp_path, "MODEL_DETECT_ASKCQ=/models/det", "MODEL_GENCQ_ASKCQ=/models/gen"))
    assert stages[-4].startswith("cq detect --preset askcq --model /models/det ")
    assert stages[-3].startswith("cq answer --preset ambigqa ")
    assert stages[-2].startswith("cq gen-cq --preset askcq --model /models/gen ") and "--all" not in stages[-2]
    assert stages[-1].startswith("cq answer --preset askcq ")
    plan = _plan(tmp_path)  # without them: the prompted LLM writes every question's CQ, as before
    stages = _stages(plan)
    assert not any(s.startswith("cq detect") for s in stages) and "ambignq.cq.askcq" not in plan
    assert stages[-2].startswith("cq gen-cq --preset askcq --method llm --all ")
    assert stages[-1].startswith("cq answer --preset askcq ")


def test_the_generator_alone_writes_every_questions_cq_from_the_predicted_answers(tmp_path):
    stages = _stages(_plan(tmp_path, "MODEL_GENCQ_ASKCQ=/models/gen"))
    assert not any(s.startswith("cq detect") for s in stages)
    assert stages[-3].startswith("cq answer --preset ambigqa ")
    assert stages[-2].startswith("cq gen-cq --preset askcq --all --model /models/gen ")
    assert "--method llm" not in stages[-2]


def test_the_classifier_alone_gates_the_prompted_llms_cqs(tmp_path):
    stages = _stages(_plan(tmp_path, "MODEL_DETECT_ASKCQ=/models/det"))
    assert stages[-4].startswith("cq detect --preset askcq --model /models/det ")
    assert stages[-2].startswith("cq gen-cq --preset askcq --method llm ") and "--all" not in stages[-2]
