"""An index part owns its search options (cqtools/retrieval/options.py): a new part with one search option is two
files (a module and its pyproject.toml, written here into a temporary plugin), `cq retrieve --help` shows its flag,
and the value given reaches the part when it opens; a flag of another part is refused."""
import json
import os
import subprocess
import sys
import textwrap

import orjson
import pytest

from .conftest import ROOT, jsonl

MODULE = '''
from dataclasses import dataclass

from cqtools.plugins import hookimpl
from cqtools.registry import option


@dataclass(frozen=True)
class EchoSearch:
    """how the echo part is searched"""

    echo_word: str = option("hello", "the word every hit of the echo part says")


class EchoPart:
    """a toy part whose every hit says its search option"""

    searchable = True
    search_options = EchoSearch

    def __init__(self, options, config):
        pass

    def build(self, ctx):
        return None

    def open(self, index, options):
        return EchoSearcher(options.echo_word)


class EchoSearcher:
    def __init__(self, word):
        self.word, self.params = word, {"echo_word": word}

    def search(self, query, k):
        return self.batch_search([query], ["q"], k)["q"]

    def batch_search(self, queries, ids, k, threads=1):
        return {i: [{"id": "e1", "title": "", "text": self.word, "score": 1.0, "rank": 1}] for i in ids}


@hookimpl
def register_index_parts(register):
    register("echo", EchoPart)
'''

PYPROJECT = '''
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "cq-echo-part"
version = "0.1"

[project.entry-points."cqtools.plugins"]
echo = "cq_echo_part"

[tool.setuptools]
py-modules = ["cq_echo_part"]
'''


@pytest.fixture(scope="module")
def echo(tmp_path_factory):
    """(PYTHONPATH with the two-file plugin installed, an index whose manifest lists its part)."""
    source, site, index = (tmp_path_factory.mktemp(name) for name in ("src", "site", "idx"))
    (source / "cq_echo_part.py").write_text(textwrap.dedent(MODULE))
    (source / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    assert sorted(os.listdir(source)) == ["cq_echo_part.py", "pyproject.toml"]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), str(source)], check=True, capture_output=True)
    (index / "cq_index.json").write_text(json.dumps({"parts": ["echo"]}))
    return os.pathsep.join([str(site), str(ROOT)]), index


def cq(args, path, input_text=""):
    return subprocess.run([sys.executable, "-m", "cqtools", *args], input=input_text, capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=path))


def test_the_parts_search_option_is_a_retrieve_flag(echo):
    shown = cq(["retrieve", "--help"], echo[0])
    assert shown.returncode == 0, shown.stderr
    assert "--echo-word TEXT" in shown.stdout and "the word every hit of the echo part says" in shown.stdout
    assert "--echo-word" not in cq(["retrieve", "--help"], str(ROOT)).stdout  # the plugin's, not cq's


@pytest.mark.parametrize("given,says", [([], "hello"), (["--echo-word", "bonjour"], "bonjour"),
                                        (["-O", "echo_word=hola"], "hola")])
def test_the_value_reaches_the_part(echo, given, says):
    path, index = echo
    result = cq(["retrieve", "--index", str(index), "--method", "echo", "--hits", "1", *given], path,
                jsonl([{"id": "q1", "question": "anything"}]))
    assert result.returncode == 0, result.stderr
    record = orjson.loads(result.stdout)
    assert record["passages"][0]["text"] == says and record["meta"]["retrieve"]["echo_word"] == says


def test_another_parts_flag_is_refused(echo):
    path, index = echo
    for args, says in ((["--method", "bm25", "--echo-word", "x"], "--echo-word does not apply to --method bm25"),
                       (["--method", "echo", "--ef-search", "64"], "--ef-search does not apply to --method echo")):
        result = cq(["retrieve", "--index", str(index), *args], path, '{"question": "q"}\n')
        assert result.returncode != 0 and says in result.stderr and "Traceback" not in result.stderr
