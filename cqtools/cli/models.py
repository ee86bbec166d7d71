"""`cq models`: each role's model (default or CQ_MODEL_* override), where it resolves from, if usable."""
from __future__ import annotations

import os

import click
import orjson


@click.command(name="models")
@click.option("--model", "names", multiple=True, help="Check these models instead of the defaults (repeatable).")
@click.option("--load", is_flag=True, help="Also load each model and run it once (slow; proves it works).")
@click.option("--json", "as_json", is_flag=True, help="JSONL rows instead of a table.")
def cli(names, load, as_json):
    """List each role's model (its CQ_MODEL_* variable's value, else the default), where it
    resolves from (local dir, HF cache, hub, offline wheel) and whether it is usable. Exit 1 if
    any listed model is not.

    \b
    Examples:
      cq models
      cq models --model my-org/my-reader --load
    """
    from ..models.registry import ROLES, status

    rows = [{"role": r.role, **status(r.model()), "used_by": r.used_by, "override": r.env,
             "from_env": bool(os.environ.get(r.env))} for r in ROLES] \
        if not names else [{"role": "-", **status(n)} for n in names]
    if load:
        for row in rows:
            if row["usable"] and row["model"]:
                _try_load(row)
    if as_json:
        for row in rows:
            click.echo(orjson.dumps(row).decode())
    else:
        width = max(len(r["model"] or "-") for r in rows)
        for row in rows:
            where = row["source"] if row["usable"] else "NOT USABLE"
            env = (f"  (from ${row['override']})" if row.get("from_env")
                   else f"  (override: {row['override']})" if "override" in row else "")
            click.echo(f"{row['role']:<13} {row['model'] or '-':<{width}}  {where}{env}")
    bad = [r for r in rows if not r["usable"]]
    for row in bad:
        click.echo(f"cq models: error: {row['problem']}", err=True)
    if bad:
        raise click.exceptions.Exit(1)


def _try_load(row: dict) -> None:
    """Load the model for its role and run one tiny input; failures mark the row unusable."""
    from ..errors import CQError
    from ..models import load_cross_encoder, load_encoder, load_generator

    role, name = row["role"], row["model"]
    try:
        if role == "encoder" or (role == "-" and row["format"] == "sentence-transformers"):
            load_encoder(name, "cpu").encode(["test"])
        elif role == "reranker" or (role == "-" and row["format"] == "onnx"):
            load_cross_encoder(name, "cpu").predict([("test", "test")])
        elif role == "score-reader":
            from ..score.reader import DisambigF1Reader

            reader = DisambigF1Reader(name, "cpu", 1)
            if reader.answer(["Who?"], ["Ann did."]) is None:
                raise ValueError(reader.error)
        else:
            load_generator(name, "cpu").generate(["Say yes."], max_new_tokens=2)
    except (CQError, OSError, ValueError, RuntimeError) as err:
        row.update(usable=False, problem=f"{name} resolved but failed to load: {str(err).splitlines()[0]}")
