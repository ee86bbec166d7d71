"""`cq disambiguate`: add disambiguated questions "dqs" (AmbigQA's qd, or ToC's rac with --tree)."""
from __future__ import annotations

import click

from .options import (api_options, batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, seed_option, stream_options)
from ..models.registry import ENCODER, LLM, RERANKER
from .stream import run_stream, spec_from

DEFAULT_MODEL, DEFAULT_RERANKER, DEFAULT_ENCODER = LLM, RERANKER, ENCODER


@click.command(name="disambiguate")
@click.option("--method", type=click.Choice(["qd", "rac"]), default="rac", show_default=True,
              help="qd: one minimal edit of the question per predicted answer (AmbigQA; needs cq answer "
                   "--mode multi); rac: few-shot DQ/answer pairs from the passages (Tree of Clarifications).")
@model_option("disambiguator", DEFAULT_MODEL, help="Causal LM: Hugging Face id, local directory, or offline copy.")
@click.option("--passages", "n_passages", type=click.IntRange(min=0), default=5, show_default=True,
              help="Top passages in each prompt (0: none; records then need no passages).")
@click.option("--passage-words", type=click.IntRange(min=10), default=80, show_default=True,
              help="Each passage's text is cut to its first this-many words in the prompt (titles stay whole; "
                   "--prune's verification passage too).")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=None,
              help="Generation length [default: 40 for qd, 128 for rac].")
@click.option("--shots", "shots_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="rac: JSONL records with gold.dqs (e.g. cq convert ambignq train_light.json) to pick "
                   "k-shot examples from by question similarity [default: built-in examples].")
@click.option("--k-shots", type=click.IntRange(min=0), default=3, show_default=True, help="rac: examples per prompt.")
@click.option("--encoder", default=DEFAULT_ENCODER, show_default=True, envvar="CQ_MODEL_ENCODER",
              help="rac --shots: bi-encoder that embeds questions to pick the nearest shots.")
@click.option("--tree", is_flag=True, help="rac: expand every DQ again, breadth first (Tree of Clarifications).")
@click.option("--max-nodes", type=click.IntRange(min=1), default=10, show_default=True,
              help="rac: stop at this many valid DQ nodes.")
@click.option("--max-depth", type=click.IntRange(min=1), default=2, show_default=True,
              help="--tree: deepest level of a DQ node (1 = plain rac).")
@click.option("--max-failures", type=click.IntRange(min=1), default=3, show_default=True,
              help="--tree: stop after this many expansions in a row that add no valid node.")
@click.option("--prune", is_flag=True,
              help="rac: drop nodes whose answer the model judges no answer to the question (True/False).")
@click.option("--reuse-tree", is_flag=True,
              help="--prune: prune the tree an earlier `--tree` run wrote into each record (grown with the same "
                   "settings: checked) instead of growing it again; the records equal growing and pruning here.")
@click.option("--reranker", default=DEFAULT_RERANKER, show_default=True, envvar="CQ_MODEL_RERANKER",
              help="--tree: cross-encoder that reranks the record's passages for each DQ.")
@click.option("--rerank-depth", type=click.IntRange(min=1), default=20, show_default=True,
              help="--tree: passages of the record reranked for each DQ.")
@compose(batch_option, device_options, load_options, max_input_option, api_options, seed_option, stream_options,
         scale_options)
def cli(method, model, n_passages, passage_words, max_new_tokens, shots_file, k_shots, encoder, tree, max_nodes,
        max_depth, max_failures, prune, reuse_tree, reranker, rerank_depth, device, dtype, seed, **kwargs):
    """Add "dqs": [{question, answer, ...}]; rac also writes the clarification "tree"
    [{id, parent, question, answer, depth, pruned, passage_id}] and every run counts its LLM
    calls per record in meta.disambiguate.model_calls.

    \b
    Examples:
      cq retrieve --index idx < q.jsonl | cq rerank --top 5 | cq answer --mode multi \\
        | cq disambiguate --method qd | cq score --task ambigqa
      cq retrieve --index idx < q.jsonl | cq rerank --top 20 \\
        | cq disambiguate --method rac --tree --prune --shots train.jsonl \\
        | cq answer --mode long | cq score --task asqa
    """
    from ..stages import disambiguate

    if method == "qd":
        for flag, value in (("--tree", tree), ("--prune", prune), ("--shots", shots_file)):
            if value:
                raise click.BadParameter(f"{flag} goes with --method rac", param_hint=flag)
    if reuse_tree and not (tree and prune):
        raise click.BadParameter("--reuse-tree prunes an earlier run's tree: pass it with --tree --prune",
                                 param_hint="--reuse-tree")
    batch_size = kwargs["batch_size"]
    spec = spec_from(kwargs, required=("question",), desc="disambiguate")
    run_stream(disambiguate.build(method, model=model, device=device, dtype=dtype, seed=seed, shots_file=shots_file,
                                  encoder=encoder, reranker=reranker, n_passages=n_passages,
                                  passage_words=passage_words, max_new_tokens=max_new_tokens, k_shots=k_shots,
                                  tree=tree, max_nodes=max_nodes, max_depth=max_depth, max_failures=max_failures,
                                  prune=prune, reuse_tree=reuse_tree, rerank_depth=rerank_depth,
                                  batch_size=batch_size), spec)
