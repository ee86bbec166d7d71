"""cq's own score tasks, registered through the plugin hooks like any plugin's (cqtools/plugins.py);
this order is the order of `cq score --task`'s choices."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_score_tasks(register):
    from . import ambigqa, asqa, cbqa, clam, cq, detect, judge, judgements, oracle, retrieval, study

    for module in (detect, cq, cbqa, ambigqa, asqa, clam, oracle, retrieval, study, judgements, judge):
        name, factory, options = module.TASK
        register(name, factory, options=options)  # the options dataclass's docstring is the task's help
