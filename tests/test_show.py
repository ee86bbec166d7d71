"""`cq show`: records for people, and one-line errors on records it cannot read."""
from cqtools.cli import cli

from .conftest import jsonl

FULL = {"id": "r1", "question": "Who played the Joker?",
        "passages": [{"id": "p1", "rank": 1, "score": 12.5, "title": "Joker (2019 film)",
                      "text": "Joaquin Phoenix plays Arthur Fleck."}],
        "ambiguity": {"label": True, "score": 0.9, "method": "always"},
        "cq": {"text": "Which film: The Dark Knight, or Joker?"},
        "answers": [{"text": "Heath Ledger", "option": "The Dark Knight"}, {"text": "Joaquin Phoenix"}],
        "errors": {"rerank": "no passages"}}


def test_renders_every_part(runner):
    result = runner.invoke(cli, ["show", "--passages", "1"], input=jsonl([FULL]))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[r1] Who played the Joker?",
        "      1.  12.500  Joker (2019 film): Joaquin Phoenix plays Arthur Fleck.",
        "    ambiguous: True (score 0.900, always)",
        "    clarify: Which film: The Dark Knight, or Joker?",
        "    answer: The Dark Knight: Heath Ledger",
        "    answer: Joaquin Phoenix",
        "    error in rerank: no passages",
        "",
    ]


def test_bad_passages_one_line_or_shown_with_skip(runner):
    records = [{"id": "a", "question": "q", "passages": "p1"}, {"id": "b", "question": "q2"}]
    failed = runner.invoke(cli, ["show"], input=jsonl(records))
    assert failed.exit_code == 1 and failed.stderr.count("\n") == 1
    assert "line 1" in failed.stderr and "'passages' must be a list of objects" in failed.stderr
    skipped = runner.invoke(cli, ["show", "--on-error", "skip"], input=jsonl(records))
    assert skipped.exit_code == 0 and "not shown: 'passages'" in skipped.stdout and "[b] q2" in skipped.stdout


def test_show_reads_files_given_as_arguments(tmp_path):
    import gzip

    from click.testing import CliRunner

    from cqtools.cli import cli

    plain = tmp_path / "a.jsonl"
    plain.write_text('{"id": "a", "question": "Who wrote Hamlet?"}\n')
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"id": "b", "question": "Who painted the Mona Lisa?"}\n'))
    result = CliRunner().invoke(cli, ["show", str(plain), str(packed)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.index("[a] Who wrote Hamlet?") < result.stdout.index("[b] Who painted the Mona Lisa?")
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"id": "c", "question": "q", "passages": "x"}\n')
    refused = CliRunner().invoke(cli, ["show", str(bad)])
    assert refused.exit_code == 1 and f"{bad} line 1" in refused.stderr


def test_show_prints_what_one_inspects_a_run_for(runner):
    record = {"id": "x", "question": "Who played the Joker?",
              "ambiguity": {"label": True, "score": 0.6579903960227966, "method": "classifier"},
              "passages": [{"id": "p", "title": "T", "text": "t", "score": 12.5, "rerank_score": 3.25, "rank": 1}],
              "selected_option": "The Dark Knight", "clarification_answer": "the 2008 one",
              "dqs": [{"question": "Who played the Joker in The Dark Knight?", "answer": "Heath Ledger"}],
              "gold": {"ambiguous": True, "answers": [["Heath Ledger"], ["Joaquin Phoenix"]]}}
    out = runner.invoke(cli, ["show", "--gold"], input=jsonl([record])).stdout
    assert "score 0.658," in out and "3.250  T: t" in out and "12.500" not in out  # rounded; the reranker's
    assert "picked: The Dark Knight" in out and "user replied: the 2008 one" in out
    assert "reading: Who played the Joker in The Dark Knight? -> Heath Ledger" in out
    assert "gold: ambiguous True, answers Heath Ledger; Joaquin Phoenix" in out


def test_show_prints_gold_only_when_asked_and_the_cq_with_its_form(runner):
    record = {"id": "x", "question": "Who played the Joker?",
              "cq": {"text": "Which film: The Dark Knight or Joker?", "options": ["The Dark Knight", "Joker"],
                     "valid": True},
              "gold": {"ambiguous": True, "answers": [["Heath Ledger"]]}}
    free = {**record, "id": "y", "cq": {"text": "Do you mean the comic?", "options": [], "valid": False}}
    out = runner.invoke(cli, ["show"], input=jsonl([record, free])).stdout
    assert "gold:" not in out
    assert "clarify: Which film: The Dark Knight or Joker?  (options: The Dark Knight; Joker)" in out
    assert "clarify: Do you mean the comic?  (free-form)" in out
    assert "gold: ambiguous True" in runner.invoke(cli, ["show", "--gold"], input=jsonl([record])).stdout


OSC52 = "\x1b]52;c;aGk=\x07"  # writes the reader's clipboard
OSC8 = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # a disguised link
CLEAR = "\x1b[2J\r"


def test_terminal_escapes_in_records_are_shown_not_run(runner):
    record = {**FULL, "id": "r" + OSC52, "question": "Who" + CLEAR + "?",
              "passages": [{**FULL["passages"][0], "title": OSC8, "text": "x\u202etxt.exe"}]}
    result = runner.invoke(cli, ["show"], input=jsonl([record]))
    assert result.exit_code == 0, result.stderr
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in result.stdout
    assert "[r\\x1b]52;c;aGk=\\x07] Who\\x1b[2J\\r?" in result.stdout and "x\\u202etxt.exe" in result.stdout


def test_terminal_escapes_in_warnings_and_errors_are_shown_not_run(runner):
    bad = jsonl([{"id": "a" + OSC52 + CLEAR, "quest": 1}, {"id": "b", "question": "q"}])
    skipped = runner.invoke(cli, ["detect", "--method", "always", "--on-error", "skip"], input=bad)
    failed = runner.invoke(cli, ["detect", "--method", "always"], input=bad)
    assert skipped.exit_code == 0 and failed.exit_code == 1
    for result in (skipped, failed):
        assert "\x1b" not in result.stderr and "\r" not in result.stderr and "\x07" not in result.stderr
        assert "(record a\\x1b]52;c;aGk=\\x07\\x1b[2J\\r)" in result.stderr and result.stderr.count("\n") == 1
