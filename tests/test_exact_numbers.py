"""Pass-through values come out byte for byte, whatever their size: integers past 64 bits are not
turned into floats (orjson's limit), in processed records and in records set aside under --on-error
skip; integer ids become strings, as docs/schema.md says (issue 36, item 9)."""
from cqtools.cli import cli

BIG = ('"big": 18446744073709551617, "neg": -9223372036854775809, "edge": [9223372036854775807, '
       '18446744073709551615, -9223372036854775808], "huge": 1' + "0" * 5000 + ', "text": "123456789012345678901"')


def test_integers_past_64_bits_are_written_through_digit_for_digit(runner):
    lines = ['{"id": 7, "question": "Who?", %s}' % BIG,
             '{"id": 123456789012345678901234567890, "question": "Who else?"}',
             '{"id": "bad", "question": 5, %s}' % BIG]  # set aside: written through unchanged
    result = runner.invoke(cli, ["detect", "--method", "always", "--on-error", "skip"], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    out = result.stdout.splitlines()
    compact = BIG.replace(": ", ":").replace(", ", ",")
    assert out[0].startswith('{"id":"7","question":"Who?",' + compact + ',"ambiguity":')
    assert out[1].startswith('{"id":"123456789012345678901234567890","question":"Who else?","ambiguity":')
    assert out[2].startswith('{"id":"bad","question":5,' + compact + ',"errors":')
    assert "e+" not in result.stdout


def test_a_record_nested_5000_deep_is_processed_or_set_aside_never_dropped(runner):
    deep = "[" * 5000 + '{"n":1}' + "]" * 5000
    lines = ['{"id": "ok", "question": "Who?", "deep": %s}' % deep,
             '{"id": "bad", "question": 5, "deep": %s}' % deep]  # set aside under skip: written through
    result = runner.invoke(cli, ["detect", "--method", "always", "--on-error", "skip"], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    out = result.stdout.splitlines()
    assert len(out) == 2 and "skipped" not in result.stderr
    assert out[0].startswith('{"id":"ok","question":"Who?","deep":' + deep + ',"ambiguity":')
    assert out[1].startswith('{"id":"bad","question":5,"deep":' + deep + ',"errors":')
