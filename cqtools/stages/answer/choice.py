"""Which reader ``cq answer --reader auto`` runs for the model named (or installed): the extractive reader for a
span model, the seqgen or fid reader for their trained directories, the generative reader otherwise."""
from __future__ import annotations

import functools

from .reader import DEFAULT_READER
from .seqgen import READER_OF_TASK, trained_task


def choose_reader(reader: str, model: str | None, config, *, generator_only: bool = False) -> tuple[str, str | None]:
    """(reader, model) for ``--reader``/``--model`` as given. ``auto`` (the default): the extractive
    reader when the model is a span (question-answering) model, the one named or else the one
    installed in $CQ_MODELS/reader (`make models`), and the generative reader otherwise (its
    default LM when no model is named and none is installed); a `cq train spanseqgen` directory is read by
    the seqgen reader, a `cq train fid` one by the fid reader. ``generator_only`` (long answers,
    --verify: they need a generator) makes ``auto`` skip the installed reader."""
    from ...errors import ResourceError
    from ...models.roles import installed_reader

    if reader == "extractive" and model is None:
        model = installed_reader(config)
        if model is None:
            raise ResourceError("--reader extractive needs --model DIR (a `cq train reader` directory) or a reader "
                                "installed in $CQ_MODELS/reader (`make models` puts one in work/models/reader)")
    if reader != "auto":
        return reader, model
    if model is None:
        model = None if generator_only else installed_reader(config)
        return ("extractive", model) if model else ("generative", None)
    if trained_task(model) in READER_OF_TASK:
        return READER_OF_TASK[trained_task(model)], model
    return ("extractive" if _span_model(model, config) else "generative"), model


@functools.lru_cache(maxsize=None)
def _span_model(model: str, config) -> bool:
    """Whether ``model`` (a directory or hub id) is a question-answering model, read from its
    config.json alone (a hub model's is one small download, cached); API models, the default LM
    and anything whose config cannot be read count as generators (their loader says what is wrong)."""
    import os

    from ...models.load import route
    from ...models.resolve import hub_file
    from ...models.roles import is_span_model

    path = os.path.expanduser(model)
    if os.path.isdir(path):
        return is_span_model(path)
    if model == DEFAULT_READER or route(model) is not None or "/" not in model:
        return False
    found = hub_file(model, "config.json", config)  # None: offline and not cached, no such repo
    return found is not None and is_span_model(os.path.dirname(found))
