"""Docs generated from the code (``make docs``; tests/test_docs.py checks they are current):
docs/cli.md from the commands' own --help, and the generated block of docs/architecture.md
(the pipeline diagram and the registries table)."""
from __future__ import annotations

import click

from .cli import cli


def _help(command: click.Command, path: list[str], parent: click.Context | None = None) -> list[str]:
    """Help as `cq ... --help` prints it: the root context takes the group's context_settings
    (-h, widths) and every subcommand's context inherits from its parent's."""
    settings = command.context_settings if parent is None else {}
    ctx = click.Context(command, info_name=path[-1], parent=parent, **settings)
    out = [f"## `{' '.join(path)}`", "", "```", command.get_help(ctx).rstrip(), "```", ""]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            out += _help(command.get_command(ctx, name), path + [name], ctx)
    return out


def cli_markdown() -> str:
    lines = ["# CLI reference", "", "Generated from `--help` by `make docs` (python -m cqtools.docgen); do not edit.", ""]
    return "\n".join(lines + _help(cli, ["cq"]) + method_options_markdown()) + "\n"


def method_options_markdown() -> list[str]:
    """Every built-in method's option schema (the flags above and ``-O KEY=VALUE`` come from it)."""
    from . import registry

    out = ["## Method options", "",
           "Each method's options, from its schema (cqtools/registry.py `Option`): a command takes them as the "
           "flag shown or as `-O NAME=VALUE`; a misspelled or inapplicable one is an error. "
           "`cq plugins --all --options` lists them as JSONL, plugins' included.", ""]
    for reg in registry.ALL:
        methods = [m for m in reg.methods() if m.plugin == "cqtools" and m.options]
        if not methods:
            continue
        out += [f"### {reg.kind} (`{reg.option}`)", "", "| method | option | flag | type | default | help |",
                "|---|---|---|---|---|---|"]
        for m in methods:
            for o in m.options:
                kind = o.type.__name__ + (f" {'/'.join(map(str, o.choices))}" if o.choices else "")
                if o.min is not None or o.max is not None:
                    kind += f" [{o.min if o.min is not None else ''}..{o.max if o.max is not None else ''}]"
                text = o.help.replace("|", "\\|") + (f" (env {o.env})" if o.env else "")
                out.append(f"| {m.name} | `{o.name}` | `{o.cli_flag}` | {kind} | {o.default!r} | {text} |")
        out.append("")
    return out


def role_variables() -> tuple:
    """One row per model role's variable (cqtools/models/roles.py ROLES): each role has its own."""
    from .config import EnvVar
    from .models.roles import ROLES

    return tuple(EnvVar(r.env, None, str, f"the {r.role} role's model [default: {r.default or 'none'}]; used by "
                                          f"{r.used_by}") for r in ROLES)


def backend_variables() -> tuple:
    """One row per model backend option read from a variable (declared on the backend: the openai backend's
    CQ_API_BASE, CQ_CONCURRENCY, ...), the way that backend's options are set (cqtools/models/backend_options.py)."""
    from .config import EnvVar, RunConfig
    from .registry import BACKENDS

    def meaning(method, opt):
        compared = "" if not opt.shaping else " (compared on --resume: it can change a record)"
        return f"{opt.cli_flag + ': ' if opt.flag else ''}the {method.name} backend's {opt.name}: {opt.help}{compared}"

    return tuple(EnvVar(o.env, "backend_settings", str, meaning(m, o)) for m in BACKENDS.methods() for o in m.options
                 if o.env)


def config_markdown() -> str:
    """docs/config.md: the run configuration's fields and every environment variable cq reads."""
    from dataclasses import fields

    from .config import RunConfig, docs_table

    shaping = RunConfig().shaping()
    rows = ["| field | default | enters the run record |", "|---|---|---|"]
    rows += [f"| `{f.name}` | {f.default!r} | {'yes' if f.name in shaping else 'no'} |"
             for f in fields(RunConfig) if f.name != "extra"]
    return "\n".join([
        "# Run configuration", "",
        "Generated from cqtools/config.py by `make docs`; do not edit.", "",
        "One frozen value (`cqtools.config.RunConfig`) holds how a run loads and calls models. A command builds "
        "it once from its flags over the environment variables below, and passes it to the methods and model "
        "loaders; Python callers pass their own (`detect.build(\"llm\", RunConfig(device=\"cpu\"))`) or get "
        "`RunConfig.from_env()` explicitly (there is no process-wide configuration). The fields that can change a "
        "record are written into `--resume`'s run record: a resume under any other value (a flag or an environment "
        "variable) is refused.", "",
        *rows, "", "## Environment variables", "", docs_table(backend_variables() + role_variables()), ""])


# The record flow of a typical run: (command, the keys it adds).
FLOW = (
    ("convert", "id, question, gold"),
    ("retrieve", "passages"),
    ("rerank", "passages (rerank_score)"),
    ("detect", "ambiguity"),
    ("gen-cq", "cq"),
    ("oracle", "selected_option"),
    ("answer", "answers, long_answer"),
    ("disambiguate", "dqs, tree"),
    ("score", "a summary"),
)
BEGIN, END = "<!-- generated:begin (make docs) -->", "<!-- generated:end -->"
TEMPLATES_BEGIN = "<!-- generated:begin templates (make docs) -->"


def architecture_block() -> str:
    """The pipeline as a mermaid diagram and every registry with its methods, from the code."""
    from . import registry
    from .cli import COMMANDS

    lines = [BEGIN, "", "```mermaid", "flowchart LR"]
    for (name, writes), nxt in zip(FLOW, FLOW[1:] + (None,)):
        assert name in COMMANDS, name
        lines.append(f'  {name.replace("-", "_")}["cq {name}<br/>adds: {writes}"]')
        if nxt:
            lines.append(f'  {name.replace("-", "_")} --> {nxt[0].replace("-", "_")}')
    lines += ["```", "", "| registry | kind | chosen by | plugin hook | methods (built in) |", "|---|---|---|---|---|"]
    for reg in registry.ALL:
        var = next(k for k, v in vars(registry).items() if v is reg)
        methods = ", ".join(f"`{m.name}`" for m in reg.methods() if m.plugin == "cqtools") or "(none yet)"
        lines.append(f"| `{var}` | {reg.kind} | `{reg.option}` | `{reg.hook}` | {methods} |")
    return "\n".join(lines + ["", END])


def with_architecture_block(text: str) -> str:
    """``text`` (docs/architecture.md) with its generated block replaced by the current one."""
    return with_block(text, architecture_block())


def with_block(text: str, block: str, begin: str = BEGIN) -> str:
    start = text.index(begin)
    end = text.index(END, start) + len(END)
    return text[:start] + block + text[end:]


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


APPLIES_NOTE = ("A row's *applies to* says which runs take it (cqtools/presets/base.py): **method**, the paper's setting "
                "of its own method, taken only while that method runs (`cq detect --preset clam --method never` gets "
                "none of CLAM's); **layout**, the paper's input layout (passages, evidence budget, answers shown, the "
                "CQ's form), taken by any method that declares the option (`cq gen-cq --preset askcq --method llm` "
                "reads AskCQ's inputs); **command**, the command's own setting (`cq retrieve --hits`), taken whatever "
                "method runs. The row that picks the method is the command's; a flag you give wins over any row. A "
                "beam-search row (`num_beams`, `qd_num_beams`) is not applied to a model an API serves (it decodes "
                "greedily; a `--num-beams` you give it is refused in one line). Each record says which rows applied: "
                "`meta.presets.<stage>` names the preset, `meta.preset_rows.<stage>` lists the rows `applied` and, "
                "for the others, why `not_applied` (another method runs, set explicitly, an API model).")


def methods_block() -> str:
    """Per preset: setting | paper or released code | ``--preset`` value | what still differs, from
    cqtools/presets/ (the same rows ``cq presets --sources`` prints)."""
    import orjson

    from . import presets

    lines = [BEGIN, "", APPLIES_NOTE, ""]
    for name in presets.names():
        preset = presets.get(name)
        lines += [f"### `--preset {name}`: {preset.help}", "", f"Paper: {preset.paper}. Released code: {preset.code}.",
                  "", "| stage | setting | applies to | paper or released code | `--preset` value | what still differs, "
                      "and why |", "|---|---|---|---|---|---|"]
        for s in preset.settings:
            value = orjson.dumps(s.value).decode()
            lines.append(f"| `cq {s.command}` | {_cell(s.setting or s.option)} | {s.applies} | {_cell(s.source)} | "
                         f"`{s.option} = {_cell(value)}` | {_differs(s)} |")
        if preset.departures:
            lines += ["", "Beyond single option values:", ""] + [f"- {_cell(d)}" for d in preset.departures]
        lines.append("")
    return "\n".join(lines + [END])


def _differs(s) -> str:
    """A row's "what still differs" cell: the difference, and its kind (forced here, a flag switches it, or else
    a real divergence)."""
    from .presets.base import DIVERGES

    if not s.differs:
        return "nothing known"
    return f"**{s.stays or DIVERGES}:** {_cell(s.differs)}"


def templates_block() -> str:
    """Every built-in prompt template: the methods that read it, its parts and each part's slots."""
    from .stages import templates

    lines = [TEMPLATES_BEGIN, "", "| template | read by | parts (slots) |", "|---|---|---|"]
    for name in templates.names():
        tpl = templates.builtin(name)
        parts = ", ".join(f"`{part}`" + (" (" + ", ".join(f"`{{{s}}}`" for s in sorted(templates.slots(body))) + ")"
                                         if templates.slots(body) else "")
                          for part, body in tpl.parts.items())
        lines.append(f"| `templates/{name}.txt` | {templates.USED_BY.get(name, '?')} | {parts} |")
    return "\n".join(lines + ["", END])


def with_methods_block(text: str) -> str:
    """``text`` (docs/methods.md) with its generated blocks replaced by the current ones."""
    return with_block(with_block(text, templates_block(), TEMPLATES_BEGIN), methods_block())


if __name__ == "__main__":
    import pathlib
    import sys

    if sys.argv[1:] == ["--config"]:
        sys.stdout.write(config_markdown())
    elif sys.argv[1:] == ["--methods"]:
        path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "methods.md"
        path.write_text(with_methods_block(path.read_text()))
    elif sys.argv[1:] == ["--readme"]:
        from .docgen_readme import with_presets_section

        path = pathlib.Path(__file__).resolve().parent.parent / "README.md"
        path.write_text(with_presets_section(path.read_text()))
    elif sys.argv[1:] == ["--architecture"]:
        path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
        path.write_text(with_architecture_block(path.read_text()))
    else:
        sys.stdout.write(cli_markdown())
