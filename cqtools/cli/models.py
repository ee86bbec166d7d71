"""`cq models`: the default model of each role, where it resolves from, whether it is usable."""
from __future__ import annotations

import click
import orjson


@click.command(name="models")
@click.option("--model", "names", multiple=True, help="Check these models instead of the defaults (repeatable).")
@click.option("--load", is_flag=True, help="Also load each model and run it once (slow; proves it works).")
@click.option("--json", "as_json", is_flag=True, help="JSONL rows instead of a table.")
def cli(names, load, as_json):
    """List each role's default model, where it resolves from (local dir, HF cache, hub, offline
    wheel) and whether it is usable. Exit 1 if any listed model is not.

    \b
    Examples:
      cq models
      cq models --model my-org/my-reader --load
    """
    from ..models.registry import ROLES, status

    rows = [{"role": r.role, **status(r.default), "used_by": r.used_by, "override": r.env} for r in ROLES] \
        if not names else [{"role": "-", **status(n)} for n in names]
    if load:
        for row in rows:
            if row["usable"]:
                _try_load(row)
    if as_json:
        for row in rows:
            click.echo(orjson.dumps(row).decode())
    else:
        width = max(len(r["model"]) for r in rows)
        for row in rows:
            where = row["source"] if row["usable"] else "NOT USABLE"
            click.echo(f"{row['role']:<10} {row['model']:<{width}}  {where}")
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
        else:
            load_generator(name, "cpu").generate(["Say yes."], max_new_tokens=2)
    except (CQError, OSError, ValueError, RuntimeError) as err:
        row.update(usable=False, problem=f"{name} resolved but failed to load: {str(err).splitlines()[0]}")
