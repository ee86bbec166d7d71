"""cq's own trainers (`cq train NAME`), registered through the plugin hooks like any plugin's (cqtools/plugins.py):
each is a click command in cqtools/cli/train.py."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_trainers(register):
    from . import train, train_rerank

    for command in (train.detect_cmd, train.gen_cq_cmd, train.reader_cmd, train.spanseqgen_cmd,
                    train.qd_cmd, train.fid_cmd, train.verifier_cmd, train.combiner_cmd, train.compact_cmd,
                    train_rerank.rerank_cmd):
        register(command.name, command, help=command.get_short_help_str(limit=90), options=[])
