"""Size bounds of the package (issue 34's acceptance): no module over 400 lines, no function or method
over 60 (``end_lineno - lineno + 1``: from the ``def`` line to its last line, decorators left out).
Each offender is listed, so a split shows what is left."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cqtools"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def offenders(root: Path = PACKAGE) -> list[str]:
    """'MODULE path lines' and 'FUNC path:line name lines' for everything over the bounds."""
    out = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        rel = path.relative_to(root.parent).as_posix()
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            out.append(f"MODULE {rel} {lines} lines (max {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(source, filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(f"FUNC {rel}:{node.lineno} {node.name} {length} lines (max {MAX_FUNCTION_LINES})")
    return out


def test_no_module_or_function_over_the_bounds():
    found = offenders()
    assert not found, "split these into well-named helpers or modules:\n" + "\n".join(found)


def test_the_walk_sees_modules_functions_methods_and_async(tmp_path):
    pkg = tmp_path / "cqtools"
    (pkg / "sub").mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(60))  # 60 body lines + the def line: 61
    (pkg / "sub" / "m.py").write_text(
        f"def short():\n    return 1\n\n\ndef long():\n{body}\n\nclass C:\n    async def method(self):\n"
        + body.replace("    ", "        ") + "\n" * 400)
    assert offenders(pkg) == [
        "MODULE cqtools/sub/m.py 529 lines (max 400)",
        "FUNC cqtools/sub/m.py:5 long 61 lines (max 60)",
        "FUNC cqtools/sub/m.py:69 method 61 lines (max 60)",
    ]
