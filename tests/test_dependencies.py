"""What cq imports is what setup.cfg declares (issue 57 item 14: openai came only through pyserini, nltk through
rouge-score), the big model libraries carry an upper bound of their next major version, and torch is pinned in
setup.cfg as the Makefile installs it. Found by walking every module's imports (ast): a module imported only in a
function counts too, since a fresh install trips on it the first time that function runs."""
import ast
import configparser
import importlib.metadata as md
import re
import sys
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
BOUNDED = ("transformers", "sentence-transformers", "accelerate", "openai", "nltk")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, Requirement]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = [line.strip() for line in cfg["options"]["install_requires"].splitlines() if line.strip()]
    return {canonical(r.name): r for r in map(Requirement, lines)}


def imported() -> dict[str, set[str]]:
    """Top-level modules cqtools imports (absolute imports, not the standard library's), with where."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "cqtools").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "cqtools":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_imported_module_comes_from_a_declared_distribution():
    distributions = md.packages_distributions()
    wanted = declared()
    undeclared = {}
    for module, where in imported().items():
        dists = {canonical(d) for d in distributions.get(module, [])}
        if not dists & set(wanted):
            undeclared[module] = (sorted(dists) or ["not installed"], sorted(where)[:2])
    assert undeclared == {}, f"imported but not in setup.cfg's install_requires: {undeclared}"


def test_the_model_libraries_have_an_upper_bound_and_torch_is_pinned_as_the_makefile_installs_it():
    wanted = declared()
    for name in BOUNDED:
        assert any(spec.operator == "<" for spec in wanted[name].specifier), f"{name}: no upper bound"
    pinned = [spec.version for spec in wanted["torch"].specifier if spec.operator == "=="]
    makefile = re.findall(r"pip install -q torch==([\d.]+)", (ROOT / "Makefile").read_text())
    assert pinned and makefile == pinned, (pinned, makefile)


def test_the_installed_versions_satisfy_the_declarations():
    for name, requirement in declared().items():
        version = md.version(requirement.name)
        assert requirement.specifier.contains(version, prereleases=True), f"{name} {version} not {requirement}"
