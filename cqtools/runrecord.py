"""The run record written beside a ``--resume`` output: ``OUT.cq.json``.

It holds what shapes the output (command, its parameters, the models' fingerprints, the prompts'
version, the cq version), so that a resumed run or a ``cq merge`` can refuse to mix records made
under different configurations, and, once a run ends, how many input records it read and wrote,
so that ``cq merge`` can tell a complete shard from a killed one.

Parameters that only change *how* the work is cut (batch size, shard count, threads, device,
error handling, verbosity) are left out: results do not depend on them.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import orjson

from . import __version__
from .errors import InputError
from .jsonl import open_input, repair_output, scan_output

log = logging.getLogger("cqtools")

SUFFIX = ".cq.json"


def config_not_shaping() -> frozenset:
    """The run configuration's fields a resume does not compare: its own marked ``NO_RECORD`` and every model
    backend's options marked ``option(shaping=False)`` (an API server's address: a requeued job may find it on
    another node; the pace of its requests)."""
    from .config import RunConfig
    from .registry import BACKENDS

    return RunConfig.not_shaping(frozenset(o.name for m in BACKENDS.methods() for o in m.options if not o.shaping))


PROMPT_MODULES = ("stages/prompts.py", "stages/prompts_disamb.py", "stages/shots.py")
_HEAD = 1 << 20  # bytes hashed at each end of a large file


def path_for(out: str) -> str:
    """The run record of OUT, beside the file OUT names (a symlink's target, not the link)."""
    return os.path.realpath(out) + SUFFIX


def prompts_version() -> str:
    """A digest of the prompt templates and few-shot examples: changes whenever any prompt does."""
    root = Path(__file__).parent
    digest = hashlib.sha256()
    paths = [root / rel for rel in PROMPT_MODULES] + sorted((root / "stages" / "templates").glob("*.txt"))
    for path in paths:
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def fingerprint(path: str) -> str:
    """A cheap content digest of a model directory or file: every file's name and size, small files
    whole, large ones by their first and last MiB (retrained weights differ there; a hub snapshot's
    path carries its commit)."""
    digest = hashlib.sha256()
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for file in files:
        size = file.stat().st_size
        digest.update(f"{file.relative_to(root) if file != root else file.name}\0{size}\0".encode())
        with open(file, "rb") as fh:
            if size <= 2 * _HEAD:
                digest.update(fh.read())
            else:
                digest.update(fh.read(_HEAD))
                fh.seek(-_HEAD, os.SEEK_END)
                digest.update(fh.read())
    return digest.hexdigest()[:16]


def models_in_use() -> list[dict]:
    """Every model this process has resolved so far, with its fingerprint."""
    from .models.resolve import RESOLVED

    return [{"name": m.name, "source": m.source, "fingerprint": fingerprint(m.path)}
            for m in sorted(RESOLVED.values(), key=lambda m: m.name)]


def build(command: str, params: dict, config=None, ignore: frozenset = frozenset()) -> dict:
    """The configuration part of a run record for ``command`` called with ``params`` under the run
    configuration ``config`` (cqtools/config.py; default: one from the environment): its fields that can
    change a record, environment variables included, all but the parameters ``ignore`` names (those that never
    change a record: the stream engine asks the registries, ``cqtools.stream.spec.not_shaping``)."""
    from .config import RunConfig
    from .models.backend_options import environment_settings

    config = config or RunConfig.from_env()  # the backends' settings from their variables too (flags win)
    config = config.replace(backend_settings=tuple(sorted({**environment_settings(),
                                                           **dict(config.backend_settings)}.items())))
    ignore = ignore - {"batch_size"} if config.padded_batches else ignore  # padded: batch mates matter
    shaping = {k: _plain(v) for k, v in sorted(params.items()) if k not in ignore}
    shaping.update({k: file_digest(v) for k, v in shaping.items() if k in CONTENT_PARAMS and v})
    return {"command": command, "params": shaping, "config": config.recorded(),
            "models": models_in_use(), "prompts": prompts_version(), "cqtools": __version__}


# Options naming a file whose content shapes the records (a --prompt template, few-shot examples): the
# run record holds the content's digest, so an edited file is a different configuration and a moved or
# renamed one is not.
CONTENT_PARAMS = frozenset({"prompt", "shots_file"})


def file_digest(path) -> str:
    """``sha256:<digest>`` of a file's bytes (the path as given when it cannot be read: the run fails
    on it later with its own message)."""
    try:
        with open(path, "rb") as fh:
            return "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()
    except (OSError, TypeError):
        return path


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def read(out: str) -> dict | None:
    path = path_for(out)
    if not os.path.exists(path):
        return None
    try:
        record = orjson.loads(Path(path).read_bytes())
    except orjson.JSONDecodeError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("params", {}), dict):
        raise InputError(f"{path} is not a cq run record; delete it (and {out}) to start over")
    return record


def write(out: str, record: dict) -> None:
    """Atomically (temp file + rename): a kill never leaves half a run record."""
    path = path_for(out)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    os.replace(tmp, path)


def difference(old: dict, new: dict, ignore: tuple[str, ...] = ()) -> str | None:
    """The first configuration difference between two run records, in words; None if they agree."""
    for key in ("command", "cqtools", "prompts"):
        if old.get(key) != new.get(key):
            label = {"prompts": "prompts' version", "cqtools": "cq version"}.get(key, key)
            return f"{label}: {old.get(key)!r} != {new.get(key)!r}"
    old_config, new_config = old.get("config"), new.get("config")
    if isinstance(old_config, dict) and isinstance(new_config, dict):  # older run records hold none
        from .config import BY_NAME, FLAGS, RunConfig

        quiet = config_not_shaping()  # the configuration's fields that never change a record
        keys = set(RunConfig.shaping_keys(old_config, quiet)) | set(RunConfig.shaping_keys(new_config, quiet))
        # padded batches first: it is why model_batch_size counts at all
        for key in sorted(keys, key=lambda k: (k != "padded_batches", k)):
            if old_config.get(key) != new_config.get(key):
                env = next((n for n, v in BY_NAME.items() if v.field == key), None)
                name = FLAGS.get(key) or f"run configuration {key}"
                return (f"{name}: {old_config.get(key)!r} != {new_config.get(key)!r}"
                        + (f" (or {env}; see docs/config.md)" if env else ""))
    old_params, new_params = old.get("params", {}), new.get("params", {})
    for key in sorted(set(old_params) | set(new_params), key=lambda k: (k != "method", k)):
        if key in ignore:
            continue
        if old_params.get(key) != new_params.get(key):
            return f"--{key.replace('_', '-')}: {old_params.get(key)!r} != {new_params.get(key)!r}"
    old_models = {m["name"]: m for m in old.get("models", [])}
    for model in new.get("models", []):
        before = old_models.get(model["name"])
        if before is not None and before.get("fingerprint") != model.get("fingerprint"):
            return (f"model {model['name']}: weights changed ({before.get('source')} "
                    f"{before.get('fingerprint')} != {model.get('source')} {model.get('fingerprint')})")
    return None


def config_of(record: dict) -> dict:
    return {k: record[k] for k in ("command", "params", "config", "models", "prompts", "cqtools") if k in record}


def open_resume(out: str, command: str, params: dict, force: bool = False, shard: list | None = None,
                config=None, ignore: frozenset = frozenset()) -> tuple[dict, int]:
    """Check ``--resume OUT`` against this run's configuration (``command`` run with ``params``, ``ignore`` those
    that never change a record: :func:`build`; ``config``: the run configuration the stage runs
    under; None: one from the environment); returns the run record to keep
    writing and how many records OUT already holds (a torn last line is cut off; a torn gzip tail is
    cut back to its last whole member and the lines that still decompress are rewritten as a new one)."""
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    new = build(command, params, config, ignore)
    new.update(shard=shard, complete=False)
    done, good_end, recovered = scan_output(out)
    old = read(out)
    if done:
        fix = "use a new output file, or pass --force-resume to append anyway"
        if old is None:
            problem = (f"--resume {out} holds {done} records but no run record {path_for(out)} "
                       f"(written by a redirect or an older cq), so cq cannot tell they come from this "
                       f"configuration; {fix}")
        else:
            why = difference(old, new)
            problem = why and f"--resume {out} was written with a different configuration ({why}); {fix}"
        if problem and not force:
            raise InputError(problem)
        if problem:
            log.warning("--force-resume: appending although %s", problem.split("; ")[0])
            new["forced_over"] = config_of(old) if old else None
    if os.path.exists(out) and (good_end != os.path.getsize(out) or recovered):
        log.warning("resume: dropping a partly written end of %s (%d complete records kept)", out, done)
        repair_output(out, good_end, recovered)
    write(out, new)
    return new, done


def command_and_params() -> tuple[str, dict]:
    """The click command running and its parameters (a stage's build() that named none)."""
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return "python", {}
    return ctx.command.name, {**ctx.meta.get("cq.params", {}), **ctx.params}


def skip_done(records, path: str, done: int):
    """Drop the first ``done`` records, checking that OUT's ids are theirs, in order (resume by
    position: duplicate ids are fine; another input file is not)."""
    with open_input(path) as fh:
        for n, (lineno, record) in enumerate(records):
            if n >= done:
                yield lineno, record
                continue
            raw = fh.readline()
            try:
                written = str(orjson.loads(raw)["id"])
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise InputError(f"{path} line {n + 1} is not a cq record; pass a file cq wrote") from None
            if written != str(record["id"]):
                raise InputError(f"--resume {path} line {n + 1} has record {written} but input line {lineno} "
                                 f"is record {record['id']}: OUT was written from another input (or another "
                                 f"--shard); use a new output file")
