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
    output_option,
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
        help="Where models run, encoders included (auto: this process's GPU if there is one, under "
             "accelerate launch its own GPU; else cpu).",
    ),
    click.option(
        "--dtype",
        type=click.Choice(["auto", "float32", "bfloat16", "float16"]),
        default="auto",
        show_default=True,
        envvar="CQ_DTYPE",
        help="Language models' weights dtype (auto: bfloat16 on a GPU that supports it, else float16 on a "
             "GPU; float32 on CPU).",
    ),
)


def _remember(ctx, param, value) -> None:
    """Options applied through a callback (not passed to the command) still shape the output:
    the run record of --resume reads them from here (cqtools/runrecord.py)."""
    ctx.meta.setdefault("cq.params", {})[param.name] = value


def _set_max_input_tokens(ctx, param, value):
    from ..models.backends import set_max_input_tokens

    set_max_input_tokens(value)
    _remember(ctx, param, value)
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


def _set_load_option(ctx, param, value):
    """Put --revision/--trust-remote-code/--quantize into the process-wide loading options; a value
    other than the default joins the run record (so older outputs stay resumable)."""
    from ..models.runtime import LOAD  # cheap: no torch

    setattr(LOAD, param.name, value)
    if value:
        _remember(ctx, param, value)
    return value


# How local models are fetched and loaded (cqtools/models/runtime.py), for every model a command loads.
load_options = compose(
    click.option(
        "--revision",
        metavar="REV",
        default=None,
        envvar="CQ_REVISION",
        expose_value=False,
        callback=_set_load_option,
        help="Hub models: this branch, tag or commit instead of the default branch. Env: CQ_REVISION.",
    ),
    click.option(
        "--trust-remote-code",
        is_flag=True,
        default=False,
        envvar="CQ_TRUST_REMOTE_CODE",
        expose_value=False,
        callback=_set_load_option,
        help="Run a hub model's own Python code (architectures transformers lacks). Off unless asked: "
             "only for repos you trust. Env: CQ_TRUST_REMOTE_CODE.",
    ),
    click.option(
        "--quantize",
        type=click.Choice(["8bit", "4bit"]),
        default=None,
        envvar="CQ_QUANTIZE",
        expose_value=False,
        callback=_set_load_option,
        help="Load language models' weights in 8 or 4 bits (bitsandbytes, CUDA GPU) [default: full precision]. "
             "Env: CQ_QUANTIZE.",
    ),
)


def _api_setting(field: str):
    """A callback that puts an API option's value into the process-wide API settings."""

    def callback(ctx, param, value):
        from ..models.openai_backend import SETTINGS  # cheap: the openai client loads on the first request

        setattr(SETTINGS, field, value)
        _remember(ctx, param, value)
        return value

    return callback


# API models (an OpenAI-compatible server). Not part of the run record: the server's address and the
# pace change no record. The key is read from CQ_API_KEY or OPENAI_API_KEY only, never from an option.
api_options = compose(
    click.option(
        "--api-base",
        metavar="URL",
        default=None,
        envvar="CQ_API_BASE",
        expose_value=False,
        callback=_api_setting("base"),
        help="Send this command's language-model calls to the OpenAI-compatible server at URL (vLLM, TGI, "
             "llama.cpp, a hosted API), e.g. http://node1:8000/v1; --model names the server's model. "
             "`--model openai:NAME` does this for one model without --api-base (server: OPENAI_BASE_URL, "
             "else api.openai.com). Key: CQ_API_KEY or OPENAI_API_KEY (environment only). Env: CQ_API_BASE.",
    ),
    click.option(
        "--concurrency",
        type=click.IntRange(min=1),
        default=4,
        show_default=True,
        envvar="CQ_CONCURRENCY",
        expose_value=False,
        callback=_api_setting("concurrency"),
        help="API models: requests in flight at once (429/5xx answers are retried with backoff). "
             "Env: CQ_CONCURRENCY.",
    ),
    click.option(
        "--api-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=120.0,
        show_default=True,
        envvar="CQ_API_TIMEOUT",
        expose_value=False,
        callback=_api_setting("timeout"),
        help="API models: seconds to wait for one answer before retrying it. Env: CQ_API_TIMEOUT.",
    ),
)


def model_option(role: str, default: str | None, help: str = "Hugging Face id, local directory, or offline copy."):
    """``--model`` for a role of the defaults table (cqtools/models/registry.py ROLES), whose
    CQ_MODEL_* variable overrides ``default``; a name not in the table (cq train's base models)
    reads CQ_MODEL_<NAME>."""
    from ..models.registry import BY_ROLE

    env = BY_ROLE[role].env if role in BY_ROLE else f"CQ_MODEL_{role.upper().replace('-', '_')}"
    return click.option("--model", default=default, show_default=True, envvar=env, help=f"{help} Env: {env}.")


__all__ = [
    "compose",
    "stream_options",
    "batch_option",
    "scale_options",
    "output_option",
    "hits_option",
    "seed_option",
    "device_options",
    "max_input_option",
    "load_options",
    "api_options",
    "model_option",
]
