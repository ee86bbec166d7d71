"""`cq view`: a local web page over one run (or two, compared) and human judgements of them."""
from __future__ import annotations

import click

from ..errors import InputError
from .declared import declared_flags
from ..view.study import ViewSettings

LOCAL_HOSTS = ("127.0.0.1", "localhost")


@click.command(name="view")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@declared_flags(ViewSettings)
@click.option("--allow-remote", is_flag=True, help="Allow --host to be other than localhost: anyone who reaches "
              "the address sees the runs and can submit judgements (a warning is printed).")
def cli(files, host, port, study, judgements, seed, allow_remote):
    """Look inside a run in the browser: a list of its records (search; filters: gold ambiguous or
    not, wrong vs gold; sort by a metric) and a page per question (passages with ranks and scores
    before and after reranking, ambiguity vs gold, the CQ, each answer with its evidence sentence,
    DQs and gold, what the record adds to each metric). With two FILES, records are paired by id
    and listed where they differ, largest metric change first. Plain JSONL files (not gzipped).

    \b
    Example:
      cq view answered.jsonl
      cq view --port 0 run_a.jsonl run_b.jsonl
      cq view --study askcq-preference --judgements judged.jsonl answered.jsonl
      cq score --task judgements < judged.jsonl
    """
    from ..view.index import RunIndex
    from ..view.server import Viewer, make_server
    from ..view.study import Study

    if len(files) > 2:
        raise InputError(f"give one run, or two to compare ({len(files)} given)")
    if host not in LOCAL_HOSTS and not allow_remote:
        raise InputError(f"--host {host} is not localhost: pass --allow-remote too if others may see the runs "
                         "and submit judgements")
    if study and not judgements:
        raise InputError(f"--study {study} needs --judgements FILE, where the judgements are appended")
    runs = [RunIndex(path) for path in files]
    chosen = Study(study, runs, judgements, seed) if study else None
    viewer = Viewer(runs, chosen, remote=host not in LOCAL_HOSTS)
    try:
        server = make_server(viewer, host, port)
    except OSError as err:
        raise InputError(f"cannot listen on {host}:{port} ({err.strerror}); pass another --port (0: a free one)")
    if viewer.remote:
        click.echo(f"cq view: warning: listening on {host}, not localhost: whoever reaches it sees these runs "
                   "and can submit judgements", err=True)
    viewer.fill_metrics()
    where = f"http://{host}:{server.server_address[1]}/" + ("study" if study else "")
    click.echo(f"cq view: {', '.join(f'{r.name} ({len(r)} records)' for r in runs)} at {where} (Ctrl-C ends)",
               err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
