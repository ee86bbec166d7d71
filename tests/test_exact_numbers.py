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


def test_a_record_nested_past_what_cq_reads_is_said_so_not_called_invalid_json(runner):
    """Past 10,000 levels a line is not read (docs/schema.md: a line error): the error says why, and
    does not call a valid line invalid JSON."""
    deep = "[" * 20_000 + "1" + "]" * 20_000
    lines = ['{"id": "deep", "question": "Who?", "deep": %s}' % deep, '{"id": "ok", "question": "Who?"}']
    skipped = runner.invoke(cli, ["detect", "--method", "always", "--on-error", "skip"], input="\n".join(lines) + "\n")
    assert skipped.exit_code == 0 and [r[:11] for r in skipped.stdout.splitlines()] == ['{"id":"ok",']
    assert "line 1: nested deeper than 10,000 levels, more than cq reads" in skipped.stderr, skipped.stderr
    assert "not valid JSON" not in skipped.stderr
    failed = runner.invoke(cli, ["detect", "--method", "always"], input="\n".join(lines) + "\n")
    assert failed.exit_code == 1 and "nested deeper than 10,000 levels" in failed.stderr


def test_a_set_aside_record_with_a_30_digit_id_keeps_its_digits_as_docs_schema_says(runner):
    """The --on-error skip warning says a record is "written through unchanged": so it must be, a 30-digit
    integer id included (once a float, 1.2345678901234568e+29), its digits only made a string, which
    docs/schema.md states for every integer id (7 becomes "7")."""
    from .conftest import ROOT

    rid = "123456789012345678901234567890"
    lines = ['{"id": %s, "question": 5, "n": 98765432109876543210987654321}' % rid, '{"id": 7, "question": "Who?"}']
    result = runner.invoke(cli, ["detect", "--method", "always", "--on-error", "skip"], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0].startswith('{"id":"%s","question":5,"n":98765432109876543210987654321,"errors":' % rid)
    assert out[1].startswith('{"id":"7","question":"Who?",')
    assert f"(record {rid}): written through unchanged" in result.stderr and "e+" not in result.output
    schema = " ".join((ROOT / "docs" / "schema.md").read_text().split())
    assert "An `id` is always a string on the way out: an integer id is written as its digits in a string" in schema


def test_only_digits_where_a_number_can_start_take_the_slow_parse():
    """A 19-digit run inside a string right after its quote (AmbigNQ's ids) is no number: orjson's parse
    stands. A run where a number token can start (after ':', '[', ',' or at the start, spaces allowed)
    is read again by the exact parser, even inside a string (slower, still exact)."""
    from cqtools import exactjson

    assert exactjson._LONG.search(b'{"id":"-4469503464110108318","q":"1234567890123456789012"}') is None  # noqa: SLF001
    for line in (b'{"n":18446744073709551617}', b'{"n": \n -18446744073709551617}', b'[1,18446744073709551617]',
                 b'[18446744073709551617]', b'18446744073709551617', b'{"t":"a: 12345678901234567890"}'):
        assert exactjson._LONG.search(line), line  # noqa: SLF001
    assert exactjson.dumps(exactjson.loads(b'{"n": [1, -18446744073709551617]}')) == b'{"n":[1,-18446744073709551617]}'
