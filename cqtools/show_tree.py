"""``cq show --tree``: a record's Tree of Clarifications (``tree`` from ``cq disambiguate --tree`` or
``--preset toc``) drawn in the terminal, each node's question and answer under its parent."""
from __future__ import annotations


def tree_lines(nodes: list, indent: str = "    ") -> list[str]:
    """The tree as text lines ("├── DQ -> answer", pruned nodes marked); [] when ``nodes`` holds no root."""
    nodes = [n for n in nodes if isinstance(n, dict)] if isinstance(nodes, list) else []
    children: dict = {}
    for node in nodes:
        children.setdefault(node.get("parent"), []).append(node)
    roots = children.get(None, [])
    if not roots:
        return []
    lines = [f"{indent}tree: {roots[0].get('question')}"]

    def walk(node_id, prefix: str) -> None:
        kids = children.get(node_id, [])
        for i, kid in enumerate(kids):
            last = i == len(kids) - 1
            mark = " (pruned)" if kid.get("pruned") else ""
            answer = f" -> {kid['answer']}" if kid.get("answer") else ""
            lines.append(f"{indent}{prefix}{'└── ' if last else '├── '}{kid.get('question')}{answer}{mark}")
            walk(kid.get("id"), prefix + ("    " if last else "│   "))

    walk(roots[0].get("id"), "")
    return lines
