"""Option bundles shared by every command, defined once and applied as decorators."""
from __future__ import annotations


import click


def compose(*decorators):
    def apply(func):
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def _shard(ctx, param, value):
    if value is None:
        return None
    try:
        index, total = (int(x) for x in value.split("/"))
    except ValueError:
        raise click.BadParameter("use I/N, e.g. 0/4 for the first of four shards") from None
    if not (total >= 1 and 0 <= index < total):
        raise click.BadParameter(f"I must be in 0..N-1, got {value}")
    return index, total


stream_options = compose(
    click.option(
        "--on-error",
        type=click.Choice(["fail", "skip"]),
        default="fail",
        show_default=True,
        help="A bad input record stops the run (fail), or is written through unchanged with the reason under "
             "\"errors\" (skip; a line that is not a JSON object is dropped). Each is reported on stderr.",
    ),
    click.option("-q", "--quiet", is_flag=True, help="No progress bar or info messages on stderr."),
)

batch_option = click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=32,
    show_default=True,
    envvar="CQ_BATCH_SIZE",
    help="Records (or pairs) processed together.",
)

scale_options = compose(
    click.option(
        "--shard",
        callback=_shard,
        metavar="I/N",
        help="Process only records whose position p satisfies p % N == I (cluster array jobs).",
    ),
    click.option(
        "--resume",
        type=click.Path(dir_okay=False),
        metavar="OUT",
        help="Write to OUT instead of stdout; if OUT exists, continue after the records it holds (restart a "
             "killed job). OUT.cq.json records the configuration; a different one is refused.",
    ),
    click.option(
        "--force-resume",
        is_flag=True,
        help="With --resume: append even if OUT was written with another configuration (or without a run record).",
    ),
)

hits_option = click.option(
    "--hits", type=click.IntRange(min=1), default=100, show_default=True, help="Passages to keep per question."
)

seed_option = click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")

device_options = compose(
    click.option(
        "--device",
        type=click.Choice(["auto", "cpu", "cuda", "mps"]),
        default="auto",
        show_default=True,
        envvar="CQ_DEVICE",
        help="Where models run (auto: accelerate picks the GPU if there is one).",
    ),
    click.option(
        "--dtype",
        type=click.Choice(["auto", "float32", "bfloat16", "float16"]),
        default="auto",
        show_default=True,
        envvar="CQ_DTYPE",
        help="Model weights' dtype (auto: bfloat16 on GPU, float32 on CPU).",
    ),
)


def _set_max_input_tokens(ctx, param, value):
    from ..models.backends import set_max_input_tokens

    set_max_input_tokens(value)
    return value


max_input_option = click.option(
    "--max-input-tokens",
    type=click.IntRange(min=16),
    default=None,
    envvar="CQ_MAX_INPUT_TOKENS",
    expose_value=False,
    callback=_set_max_input_tokens,
    help="Model inputs longer than this many tokens lose their middle, with a warning on stderr "
         "[default: the model's context].",
)


def model_option(role: str, default: str, help: str = "Hugging Face id, local directory, or offline copy."):
    """``--model`` for a role; the environment variable CQ_MODEL_<ROLE> overrides the default."""
    return click.option(
        "--model",
        default=default,
        show_default=True,
        envvar=f"CQ_MODEL_{role.upper().replace('-', '_')}",
        help=f"{help} Env: CQ_MODEL_{role.upper().replace('-', '_')}.",
    )


__all__ = [
    "compose",
    "stream_options",
    "batch_option",
    "scale_options",
    "hits_option",
    "seed_option",
    "device_options",
    "max_input_option",
    "model_option",
]
