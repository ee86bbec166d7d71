"""`cq data`: the public data sets (AmbigNQ, ASQA, NQ-open, DPR's Wikipedia) from their official sources
(cqtools/data/)."""
from __future__ import annotations

import sys

import click

from .listing import emit, listing_options

from ..jsonl import dumps

_DIR = click.option("--dir", "directory", type=click.Path(file_okay=False),
                    help="The data directory [$CQ_DATA, else ~/.cache/cqtools/data].")


@click.group(name="data")
def cli():
    """The public data sets the experiments read (make data runs `cq data get`).

    \b
    Example:
      cq data list | jq -r '[.name, .url] | @tsv'
      cq data get ambignq-light asqa nq-open --dir data
      cq convert ambignq data/ambignq/dev_light.json | head -3
    """


@cli.command(name="list")
@_DIR
@listing_options
def list_(directory, as_json, as_table):
    """The data sets: a table on a terminal, else one JSON object per data set: {"name", "url", "help", "dir" (where it goes), "source" (the
    downloaded file, relative to the data directory), "files" (what the Makefile reads there), "sha256"
    (the pinned checksum of the source, null: not pinned yet)}.

    \b
    Example:
      cq data list | jq -r .name
    """
    from .. import data
    from ..config import data_root

    emit([data.dataset(name).describe(directory or data_root()) for name in data.names()],
         ["name", "dir", "source", "sha256", "url"], as_json, as_table)


@cli.command(name="get")
@click.argument("names", nargs=-1, required=True)
@_DIR
@click.option("--mirror", metavar="URL", help="Fetch each file by its name under this base URL instead of its "
              "official address [$CQ_DATA_MIRROR].")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="Seconds to wait for a server; a download still under 10 KiB/s on average after that long is "
                   "stopped.")
def get(names, directory, mirror, timeout):
    """Download data sets NAMES from their official sources into the data directory, unpack them where
    the Makefile reads them, and record every file's SHA-256 in DIR/SHA256SUMS; a later `get` checks
    the files against it. A file already in its directory (put there by hand, without network) is used
    without downloading; data sets whose files are all there are left as they are. Writes one JSON
    object per data set: {"name", "dir", "action" (present|placed|downloaded), "files": [{"path",
    "sha256", "pinned"}]}. Most official checksums are not pinned yet: the printed sha256 of a source
    file is what to pin in cqtools/data/__init__.py (docs/data.md).

    \b
    Example:
      cq data get ambignq-light asqa nq-open
      cq data get psgs-w100 --dir /data/cq && cq index --corpus /data/cq/wikipedia/psgs_w100.tsv.gz --out idx
    """
    from .. import data
    from ..config import data_root, env

    root = directory or data_root()
    for name in names:
        data.dataset(name)  # every name known before the first download
    for name in names:
        sys.stdout.buffer.write(dumps(data.get(name, root, mirror=mirror or env("CQ_DATA_MIRROR"), timeout=timeout)))
        sys.stdout.buffer.flush()
