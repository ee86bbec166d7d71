"""Every CQ_MODEL_* variable of `cq models` really reaches its commands: pointed at a model that
does not exist, each command fails naming it (so the variable was read), in one line."""
import pytest

from cqtools.cli import cli
from cqtools.models.roles import ROLES

from .conftest import FIXTURES, jsonl

RECORD = {"id": "q1", "question": "Who played the Joker?",
          "passages": [{"id": "p1", "title": "Joker", "text": "Joaquin Phoenix played the Joker.", "rank": 1}],
          "cq": {"text": "Which film: Joker, or The Dark Knight?", "options": ["Joker", "The Dark Knight"]},
          "answers": [{"text": "Joaquin Phoenix"}],
          "gold": {"ambiguous": True, "dqs": [{"question": "Who played the Joker in Joker?", "answers": ["x"]}],
                   "answers": [["x"]], "long_answers": ["x"], "qa_pairs": []},
          "long_answer": "Joaquin Phoenix played the Joker."}

# role -> the command line that reads its variable (input: RECORD)
COMMANDS = {
    "encoder": ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--dense", "-q"],  # --out added per test
    "reranker": ["rerank"],
    "reader": ["answer", "--mode", "single"],
    "classifier": ["detect"],
    "detector": ["detect", "--method", "llm"],
    "generator": ["gen-cq", "--method", "llm"],
    "disambiguator": ["disambiguate", "--method", "qd"],
    "oracle": ["oracle", "--method", "llm"],
    "score-reader": ["score", "--task", "asqa"],
}


def test_every_role_has_a_command_here():
    assert {r.role for r in ROLES} == set(COMMANDS)


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.role)
def test_variable_reaches_the_command(runner, role, tmp_path):
    missing = str(tmp_path / f"no-such-{role.role}-model")
    args = list(COMMANDS[role.role])
    if role.role == "encoder":
        args += ["--out", str(tmp_path / "idx")]
    result = runner.invoke(cli, args, input=jsonl([RECORD]), env={role.env: missing})
    if role.role == "score-reader":  # the scorer reports a reader it cannot load in the summary's notes
        assert result.exit_code == 0 and f"no-such-{role.role}-model" in result.stdout, result.stdout
        assert '"disambig_f1":null' in result.stdout
        return
    assert result.exit_code != 0, (role.env, result.stdout)
    assert f"no-such-{role.role}-model" in result.stderr, (role.env, result.stderr)
    assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr
