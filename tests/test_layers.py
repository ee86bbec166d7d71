"""The layers of docs/architecture.md hold: every import of cqtools/ and bench/ (ast: at module level or inside a
function) runs to the importer's own layer or a lower one, and no files import each other in a circle."""
from __future__ import annotations

import re
from pathlib import Path

from tests.import_graph import circles, imports, modules

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def layers(text: str) -> list[tuple[str, list[str]]]:
    """[(name, [module or package, dotted])] from docs/architecture.md's list, bottom first."""
    block = re.search(r"<!-- layers:begin.*?-->\n(.*?)<!-- layers:end -->", text, re.S)
    assert block, "docs/architecture.md has no <!-- layers:begin --> ... <!-- layers:end --> list"
    out = []
    for line in block.group(1).splitlines():
        found = re.match(r"- \*\*(.+?)\*\*: (.*)", line)
        if found:
            paths = re.findall(r"`([\w/.]+(?:/|\.py))`", found.group(2))
            out.append((found.group(1), [_dotted(p) for p in paths]))
    return out[::-1]


def _dotted(path: str) -> str:
    """``cqtools/cli/`` -> ``cqtools.cli.`` (a package: every module under it); ``cqtools/runrecord.py`` ->
    ``cqtools.runrecord`` (that module alone; ``cqtools/__init__.py`` is ``cqtools``)."""
    if path.endswith("/"):
        return path.rstrip("/").replace("/", ".") + "."
    name = path[:-len(".py")].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def layer_of(module: str, declared: list[tuple[str, list[str]]]) -> int | None:
    """The index (0 = ground) of the layer whose longest path holds ``module``; None when none does."""
    best = None
    for n, (_, paths) in enumerate(declared):
        for path in paths:
            holds = module + "." == path or module.startswith(path) if path.endswith(".") else module == path
            if holds and (best is None or len(path) > best[1]):
                best = (n, len(path))
    return best and best[0]


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    mods = {**modules(root / "cqtools"), **modules(root / "bench")}
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def arrows_up(root: Path = ROOT, text: str | None = None) -> list[str]:
    """Every import from a lower layer to a higher one, as ``a (layer) -> b (layer)``."""
    declared = layers(DOC.read_text() if text is None else text)
    out = []
    for module, targets in sorted(graph(root).items()):
        here = layer_of(module, declared)
        for target in sorted(targets):
            there = layer_of(target, declared)
            if here is not None and there is not None and there > here:
                out.append(f"{module} ({declared[here][0]}) -> {target} ({declared[there][0]})")
    return out


def test_every_module_stands_on_a_declared_layer():
    declared = layers(DOC.read_text())
    assert [name for name, _ in declared][:1] == ["ground"] and len(declared) > 5
    unplaced = [m for m in graph() if layer_of(m, declared) is None]
    assert unplaced == [], f"no layer of docs/architecture.md holds {unplaced}: add them to its list"


def test_no_import_runs_from_a_lower_layer_to_a_higher_one():
    assert arrows_up() == []


def test_a_function_level_import_counts_too(tmp_path):
    """The check sees an import inside a function: a ground module reaching into cli is caught."""
    for package in ("cqtools", "cqtools/cli", "bench"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "cqtools" / "errors.py").write_text("def f():\n    from .cli import main\n")
    (tmp_path / "cqtools" / "cli" / "main.py").write_text("from ..errors import f\n")
    assert arrows_up(tmp_path) == ["cqtools.errors (ground) -> cqtools.cli.main (commands)"]


def test_no_files_import_each_other_in_a_circle():
    assert circles(ROOT / "cqtools") == [] and circles(ROOT / "bench") == []
