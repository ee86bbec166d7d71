"""Option bundles shared by every command, defined once and applied as decorators."""
from __future__ import annotations


import click

from ..config import RunConfig
from ..stream.spec import StreamSpec


def compose(*decorators):
    def apply(func):
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def parse_shard(ctx, param, value):
    """`--shard I/N`'s callback: (I, N), or None when not given."""
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
        default=StreamSpec.on_error,
        show_default=True,
        help="A bad input record stops the run (fail), or is written through unchanged with the reason under "
             "\"errors\" (skip; a line that is not a JSON object is dropped). Each is reported on stderr.",
    ),
    click.option("-q", "--quiet", is_flag=True, help="No progress bar or info messages on stderr."),
)

batch_option = compose(
    click.option(
        "--batch-size",
        type=click.IntRange(min=1),
        default=StreamSpec.batch_size,
        show_default=True,
        envvar="CQ_BATCH_SIZE",
        help="Records per stream batch: read, processed and written together (outputs do not depend on it "
             "unless CQ_PADDED_BATCHES=1).",
    ),
    click.option(
        "--model-batch-size",
        type=click.IntRange(min=1),
        default=RunConfig.model_batch_size,
        show_default=True,
        envvar="CQ_BATCH_SIZE_MODEL",
        expose_value=False,
        callback=lambda ctx, param, value: _config_field("model_batch_size", remember=False)(ctx, param, value),
        help="Items per model forward pass (reranked pairs, read passages, scored continuations); each input "
             "alone unless CQ_PADDED_BATCHES=1, then this many padded together.",
    ),
)

output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write to FILE instead of stdout, all or nothing: a temp file renamed to FILE when the run ends "
         "well (a failed run leaves FILE as it was). FILE.gz is gzipped. For a file a killed run can "
         "continue, use --resume instead.",
)

scale_options = compose(
    click.argument("inputs", nargs=-1, type=click.Path(exists=True, dir_okay=False), metavar="[FILE]..."),
    click.option("--total", type=click.IntRange(min=0), metavar="N",
                 help="Records to expect, for the progress bar's total and ETA when reading standard input "
                      "(FILE arguments are counted)."),
    output_option,
    click.option(
        "--shard",
        callback=parse_shard,
        metavar="I/N",
        help="Process only records whose position p satisfies p % N == I (cluster array jobs).",
    ),
    click.option(
        "--resume",
        type=click.Path(dir_okay=False),
        metavar="OUT",
        help="Write to OUT instead of stdout, as it goes; if OUT exists, continue after the records it holds "
             "(restart a killed job). OUT.cq.json records the configuration; a different one is refused. "
             "OUT.gz is gzipped (one gzip member per batch; a torn one is repaired on resume).",
    ),
    click.option(
        "--force-resume",
        is_flag=True,
        help="With --resume: append even if OUT was written with another configuration (or without a run record).",
    ),
)

def _seed_option():
    from ..stages.options import CommandSettings
    from .declared import declared_flags

    return declared_flags(CommandSettings, "seed")


seed_option = _seed_option()

def remember_param(ctx, param, value) -> None:
    """Options applied through a callback (not passed to the command) still shape the output:
    the run record of --resume reads them from here (cqtools/runrecord.py)."""
    ctx.meta.setdefault("cq.params", {})[param.name] = value


def record_config(ctx, field: str, value) -> None:
    """Note a flag's value for a field of the run configuration (cqtools/config.py): :func:`run_config` builds
    the configuration from these, once (a callback records; it never builds or sets anything else)."""
    ctx.meta.setdefault("cq.config", {})[field] = value
    ctx.meta.pop("cq.run_config", None)


def record_backend_setting(ctx, name: str, value) -> None:
    """Note a model backend option's flag (``--api-base``, ...) for the configuration's backend settings."""
    ctx.meta.setdefault("cq.backend_settings", {})[name] = value
    ctx.meta.pop("cq.run_config", None)


def run_config(ctx=None):
    """The command's run configuration, one value: the environment's (:meth:`RunConfig.from_env`) with the flags
    the command was given on top, built where the command starts and the same for the rest of it. The command
    passes it to the stage, the stage to its loaders; nothing keeps it for the process."""
    ctx = ctx or click.get_current_context()
    config = ctx.meta.get("cq.run_config")
    if config is None:
        config = RunConfig.from_env().replace(**ctx.meta.get("cq.config", {}))
        settings = ctx.meta.get("cq.backend_settings")
        if settings:
            config = config.replace(backend_settings=tuple(sorted({**dict(config.backend_settings),
                                                                   **settings}.items())))
        ctx.meta["cq.run_config"] = config
    return config


def _config_field(field: str, remember: bool = True, only_set: bool = False):
    """A callback that records an option's value for the run configuration (:func:`run_config`; flags win over
    environment variables) and, for the run record, the option itself."""

    def callback(ctx, param, value):
        record_config(ctx, field, value)
        if remember and (value or not only_set):
            remember_param(ctx, param, value)
        return value

    return callback


def _config_choice(flag: str, field: str, choices: list[str], envvar: str, help: str):
    """A RunConfig field as a choice flag: its default the field's, read from ``envvar``, kept in the configuration."""
    return click.option(flag, type=click.Choice(choices), default=getattr(RunConfig, field), show_default=True,
                        envvar=envvar, callback=_config_field(field, remember=False), help=help)


device_option = _config_choice(
    "--device", "device", ["auto", "cpu", "cuda", "mps"], "CQ_DEVICE",
    "Where models run, encoders included (auto: this process's GPU if there is one, under "
    "accelerate launch its own GPU; else cpu).")
device_options = compose(
    device_option,
    _config_choice("--dtype", "dtype", ["auto", "float32", "bfloat16", "float16"], "CQ_DTYPE",
                   "Language models' weights dtype (auto: bfloat16 on a GPU that supports it, else float16 on a "
                   "GPU; float32 on CPU)."),
)


max_input_option = click.option(
    "--max-input-tokens",
    type=click.IntRange(min=16),
    default=None,
    envvar="CQ_MAX_INPUT_TOKENS",
    expose_value=False,
    callback=_config_field("max_input_tokens"),
    help="Model inputs longer than this many tokens lose their middle, with a warning on stderr "
         "[default: the model's context].",
)


# How local models are fetched and loaded (cqtools/models/runtime.py), for every model a command loads.
load_options = compose(
    click.option(
        "--revision",
        metavar="REV",
        default=None,
        envvar="CQ_REVISION",
        expose_value=False,
        callback=_config_field("revision", only_set=True),
        help="Hub models: this branch, tag or commit instead of the default branch. Env: CQ_REVISION.",
    ),
    click.option(
        "--trust-remote-code",
        is_flag=True,
        default=RunConfig.trust_remote_code,
        envvar="CQ_TRUST_REMOTE_CODE",
        expose_value=False,
        callback=_config_field("trust_remote_code", only_set=True),
        help="Run a hub model's own Python code (architectures transformers lacks). Off unless asked: "
             "only for repos you trust. Env: CQ_TRUST_REMOTE_CODE.",
    ),
    click.option(
        "--quantize",
        type=click.Choice(["8bit", "4bit"]),
        default=None,
        envvar="CQ_QUANTIZE",
        expose_value=False,
        callback=_config_field("quantize", only_set=True),
        help="Load language models' weights in 8 or 4 bits (bitsandbytes, CUDA GPU) [default: full precision]. "
             "Env: CQ_QUANTIZE.",
    ),
)




def model_option(role: str, default: str | None, help: str = "Hugging Face id, local directory, or offline copy."):
    """``--model`` for a role of the defaults table (cqtools/models/roles.py ROLES), whose
    CQ_MODEL_* variable overrides ``default``; a name not in the table (cq train's base models)
    reads CQ_MODEL_<NAME>."""
    from ..models.roles import BY_ROLE

    env = BY_ROLE[role].env if role in BY_ROLE else f"CQ_MODEL_{role.upper().replace('-', '_')}"
    return click.option("--model", default=default, show_default=True, envvar=env, help=f"{help} Env: {env}.")


def opt_pairs(ctx, param, values):
    pairs = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"use KEY=VALUE, e.g. -O threshold=0.3 (got {value!r})")
        pairs[key.strip().replace("-", "_")] = text
    return pairs


__all__ = [
    "compose",
    "parse_shard",
    "stream_options",
    "batch_option",
    "scale_options",
    "output_option",
    "seed_option",
    "device_options",
    "max_input_option",
    "load_options",
    "model_option",
    "run_config",
    "record_config",
    "record_backend_setting",
]
