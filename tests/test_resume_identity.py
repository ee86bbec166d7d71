"""--resume knows a file by what it is, not by its name: an edited --prompt template is another
configuration (a moved one is not), and OUT reached through a symlink is the same OUT, locked once
(issue 36, items 4 and 5)."""
import os

from cqtools import runrecord
from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl
from .test_resume_lock import hold

QUESTIONS = [{"id": f"q{n}", "question": f"Who played the Joker, number {n}?"} for n in range(4)]


def _detect(runner, server, out, prompt, records):
    api = ["--model", "openai:fake", "--api-base", server.url, "-q"]
    return runner.invoke(cli, ["detect", "--method", "llm", *api, "--prompt", str(prompt), "--resume", str(out)],
                         input=jsonl(records))


def test_resume_after_the_prompt_file_was_edited_is_refused(runner, server, tmp_path, monkeypatch):
    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_KEY", "sk-test")
    prompt, out = tmp_path / "prompt.txt", tmp_path / "out.jsonl"
    prompt.write_text("[[instruction]]\nIs the question ambiguous? Answer True or False.\n")
    server.control(reset=True, reply=" True")
    first = _detect(runner, server, out, prompt, QUESTIONS[:2])
    assert first.exit_code == 0, first.stderr
    prompt.write_text("[[instruction]]\nIs the question clear? Answer True or False.\n")  # same path, new wording
    again = _detect(runner, server, out, prompt, QUESTIONS)
    assert again.exit_code == 1 and "--prompt: 'sha256:" in again.stderr and "--force-resume" in again.stderr
    assert len(parse_jsonl(out.read_text())) == 2
    moved = tmp_path / "moved.txt"  # the same template elsewhere: the same configuration
    moved.write_text("[[instruction]]\nIs the question ambiguous? Answer True or False.\n")
    os.rename(prompt, tmp_path / "edited.txt")
    resumed = _detect(runner, server, out, moved, QUESTIONS)
    assert resumed.exit_code == 0, resumed.stderr
    assert [r["id"] for r in parse_jsonl(out.read_text())] == ["q0", "q1", "q2", "q3"]


def test_the_run_lock_is_the_files_not_the_names(runner, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("")
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)
    holder = hold(out, "live", 60)  # another cq process writing OUT
    try:
        result = runner.invoke(cli, ["detect", "--method", "always", "--resume", str(link)], input=jsonl(QUESTIONS))
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 1 and "is being written by another cq process" in result.stderr
    assert out.read_text() == ""
    done = runner.invoke(cli, ["detect", "--method", "always", "--resume", str(link)], input=jsonl(QUESTIONS))
    assert done.exit_code == 0 and len(parse_jsonl(out.read_text())) == 4
    assert os.path.exists(str(out) + runrecord.SUFFIX) and not os.path.exists(str(link) + runrecord.SUFFIX)


def test_the_run_lock_holds_for_a_hard_link_to_out(runner, tmp_path):
    """A hard link is another name of the same file that realpath cannot see through: OUT itself is
    locked too, so `--resume o.jsonl` and `--resume h.jsonl` (ln o.jsonl h.jsonl) never both append."""
    out, hard = tmp_path / "out.jsonl", tmp_path / "hard.jsonl"
    out.write_text("")
    os.link(out, hard)
    holder = hold(out, "live", 60)  # another cq process writing OUT by its first name
    try:
        result = runner.invoke(cli, ["detect", "--method", "always", "--resume", str(hard)], input=jsonl(QUESTIONS))
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 1 and "under another name (a hard link" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and out.read_text() == ""
    done = runner.invoke(cli, ["detect", "--method", "always", "--resume", str(out)], input=jsonl(QUESTIONS))
    assert done.exit_code == 0 and len(parse_jsonl(out.read_text())) == 4
