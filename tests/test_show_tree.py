"""Issue 37, item 9: `cq show --tree` draws a record's Tree of Clarifications in the terminal."""
from cqtools.cli import cli

from .conftest import jsonl

TREE = [{"id": 0, "parent": None, "question": "Who played the Joker?", "answer": None, "depth": 0, "pruned": False},
        {"id": 1, "parent": 0, "question": "Who played the Joker in 2008?", "answer": "Heath Ledger", "depth": 1,
         "pruned": False},
        {"id": 2, "parent": 1, "question": "Who played the Joker in The Dark Knight?", "answer": "Ledger", "depth": 2,
         "pruned": True},
        {"id": 3, "parent": 0, "question": "Who played the Joker in 2019?", "answer": "Joaquin Phoenix", "depth": 1,
         "pruned": False}]


def test_show_tree_draws_each_node_under_its_parent(runner):
    record = {"id": "j", "question": "Who played the Joker?", "tree": TREE,
              "dqs": [{"question": "Who played the Joker in 2008?", "answer": "Heath Ledger"}]}
    result = runner.invoke(cli, ["show", "--tree", "--passages", "0"], input=jsonl([record]))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1:5] == [
        "    tree: Who played the Joker?",
        "    ├── Who played the Joker in 2008? -> Heath Ledger",
        "    │   └── Who played the Joker in The Dark Knight? -> Ledger (pruned)",
        "    └── Who played the Joker in 2019? -> Joaquin Phoenix"]
    plain = runner.invoke(cli, ["show", "--passages", "0"], input=jsonl([record])).stdout
    assert "├──" not in plain and "reading: Who played the Joker in 2008? -> Heath Ledger" in plain
