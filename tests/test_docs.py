"""docs/cli.md is generated from --help and must match the code."""
from cqtools.docgen import cli_markdown

from .conftest import ROOT


def test_cli_reference_is_current():
    current = (ROOT / "docs" / "cli.md").read_text()
    assert current == cli_markdown(), "docs/cli.md is stale: run `make docs`"


def test_architecture_block_is_current():
    from cqtools.docgen import with_architecture_block

    current = (ROOT / "docs" / "architecture.md").read_text()
    assert current == with_architecture_block(current), "docs/architecture.md is stale: run `make docs`"
