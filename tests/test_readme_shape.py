"""Issue 37, item 10: the README starts with the two set-up commands, then says what to do next (reproduce a
paper, run on your data, on a GPU server, on a cluster); the long reference lives in docs/reference.md; every
link between the docs leads somewhere."""
import re

from .conftest import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path) -> set[str]:
    """GitHub's anchors of a markdown file's headings, and its HTML anchors (id= or name=)."""
    text = path.read_text()
    return ({re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
             for line in text.splitlines() if line.startswith("#")}
            | set(re.findall(r"""<a [^>]*(?:id|name)=["']([^"']+)["']""", text)))


def test_the_readme_starts_with_the_two_commands_then_what_next():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    assert blocks[0].split()[:2] == ["make", "demo"] and blocks[1].split()[:2] == ["make", "test"]
    after = readme.split(blocks[1] + "```", 1)[1]
    what_next = after[after.index("**What next:**"):].split("\n\n", 1)[0]
    assert after.index("**What next:**") < after.index("```")  # before any other command
    for where, link in (("reproduce a paper", "#reproduce-a-paper"), ("run on your data", "docs/data.md"),
                        ("on a GPU server", "docs/cluster.md"), ("on a cluster", "docs/cluster.md"),
                        ("every command and its options", "docs/reference.md")):
        assert where in what_next and f"]({link})" in what_next, where
    assert len(readme.splitlines()) < 150, "the reference belongs in docs/reference.md"
    for section in ("## Commands", "## Experiments", "## Models and offline use", "## cq chat"):
        assert section not in readme and section in (ROOT / "docs" / "reference.md").read_text()


def test_every_link_between_the_docs_leads_somewhere():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for doc in docs:
        for target in LINK.findall(doc.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken
