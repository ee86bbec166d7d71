"""cq's own stage methods, registered through the plugin hooks like any plugin's (cqtools/plugins.py
DEFAULT_PLUGINS): detectors, CQ methods, readers, oracles, disambiguation methods, answer modes and
``cq convert`` formats, each with its option schema. Importing this module imports no model library."""
from __future__ import annotations

from ..models.roles import role
from ..plugins import hookimpl
from ..registry import Option

LLM = role("detector").default

# Options several methods share (same flag, same meaning).
PROMPT = Option("prompt", str, None, "a prompt template file replacing cq's wording (its [[parts]]; see docs/methods.md)",
                flag="--prompt")
PASSAGES = Option("n_passages", int, 3, "top passages shown to the model (0: none)", min=0, flag="--passages")
CQ_TOKENS = Option("max_new_tokens", int, 40, "tokens generated", min=1)
WITH_ANSWERS = Option("with_answers", str, None, "add answers to the input after the question: pred = the record's "
                      "`answers` (cq answer --mode multi), gold = gold.answers (upper bound)", choices=("pred", "gold"))
MAX_PASSAGE_TOKENS = Option("max_passage_tokens", int, None, "read whole passages in order while the question, the "
                            "answers and they fit this many tokens, at most --passages of them (count noted in "
                            "meta.passages_read.gen-cq) [default: unset, each passage cut to 60 words]", min=1)
NUM_BEAMS = Option("num_beams", int, 1, "beam search width (1: greedy; a local model only)", min=1)
TWO_OPTIONS = Option("two_options", str, "or", "how a CQ with two options is written: or (\"A or B\") or comma "
                     "(\"A, or B\", AskCQ's; its parser reads \"A or B\" as one option)", choices=("or", "comma"))
CQ_OPTIONS = Option("options", str, "all", "which options to keep: all, or grounded (every word found in the question "
                    "or the passages read; others listed in cq.dropped.ungrounded)", choices=("all", "grounded"))


def _threshold(default, help="label = score > threshold"):
    return Option("threshold", float, default, help)


@hookimpl
def register_detectors(register):
    from . import clam, detect, detect_combined

    register("classifier", detect.classifier_detector, options=detect.ClassifierOptions)
    register("llm", detect.load_llm_detector, options=detect.LlmDetectorOptions)
    register("answers", detect.answers_detector, options=detect.AnswersOptions)
    register("tree", detect.tree_detector, options=detect.TreeOptions)
    register("always", detect.constant_detector, options=detect.AlwaysOptions)
    register("never", detect.constant_detector, options=detect.NeverOptions)
    register("clam", clam.clam_detector, options=clam.DetectOptions)
    register("combined", detect_combined.combined_detector, options=detect_combined.CombinedOptions)


@hookimpl
def register_cq_methods(register):
    from . import clam, gen_cq

    register("from-dqs", gen_cq.from_dqs_method, options=gen_cq.FromDqsOptions)
    register("llm", gen_cq.load_llm_method, options=gen_cq.LlmOptions)
    register("clam", clam.clam_cq_method, options=clam.CQOptions)
    register("clam-prompting", clam.prompting_method, options=clam.PromptingOptions)
    register("seq2seq", gen_cq.load_seq2seq_method, options=gen_cq.Seq2SeqOptions)


@hookimpl
def register_answer_modes(register):
    from . import answer, clam
    from .answer import options as O

    register("single", answer.qa_mode("single"), options=O.SingleOptions)
    register("cq", answer.qa_mode("cq"), options=O.CQModeOptions)
    register("multi", answer.qa_mode("multi"), options=O.MultiOptions)
    register("dqs", answer.qa_mode("dqs"), options=O.DqsOptions)
    register("dialogue", clam.dialogue_mode, options=clam.DialogueOptions)
    register("long", answer.long_mode, options=O.LongOptions)


@hookimpl
def register_readers(register):
    from .answer import extractive, options, reader

    register("extractive", extractive.extractive_reader, options=options.ExtractiveReaderOptions)
    register("generative", reader.generative_reader, options=options.GenerativeOptions)


@hookimpl
def register_oracles(register):
    from . import clam, oracle

    register("overlap", oracle.overlap_oracle, options=oracle.OverlapOptions)
    register("clam", clam.clam_oracle, options=clam.OracleOptions)
    register("llm", oracle.llm_oracle, options=oracle.LlmOracleOptions)


DISAMBIG_COMMON = [
    Option("model", str, LLM, "a causal LM"),
    Option("n_passages", int, 5, "top passages in each prompt (0: none)", min=0, flag="--passages"),
    Option("passage_words", int, 80, "each passage cut to its first this-many words", min=10),
    Option("max_new_tokens", int, None, "generation length [default: 40 for qd, 128 for rac]", min=1),
    PROMPT,
]

QD_OPTIONS = [
    Option("layout", str, "cq", "prompt order: cq (passages, question, answer, others) or ambigqa (the released "
           "input's: target answer, question, other answers, passages)", choices=("cq", "ambigqa")),
    Option("passage_order", str, "answer-first", "answer-first (the shown passages holding the answer moved "
           "first) or reranked (the record's order, as AmbigQA)", choices=("answer-first", "reranked")),
    Option("duplicates", str, "fallback", "a DQ that echoes the question or an earlier DQ becomes "
           "'AQ (title)?' (fallback) or stays as generated (keep, as AmbigQA)", choices=("fallback", "keep")),
    Option("max_others", int, 5, "other answers in each prompt (0: all)", min=0),
    Option("max_passage_tokens", int, None, "passages in order (at most --passages) while the prompt's question, "
           "answers and passages fit this many tokens [default: no budget, the top --passages]", min=1),
]


@hookimpl
def register_disambiguators(register):
    register("qd", _disambiguator("qd"),
             help="one minimal edit of the question per predicted answer (AmbigQA; needs cq answer --mode multi)",
             options=DISAMBIG_COMMON + QD_OPTIONS)
    register("disambig-first", _disambiguator("disambig-first"),
             help="AmbigQA's DISAMBIG-FIRST: closed-book DQs (no answers) for the questions cq detect labelled "
                  "ambiguous; the others keep their question (then cq answer --mode dqs)",
             options=[Option("model", str, LLM, "a causal LM"),
                      Option("max_new_tokens", int, None, "generation length [default: 128]", min=1), PROMPT])
    register("rac", _disambiguator("rac"),
             help="few-shot DQ/answer pairs from the passages (Tree of Clarifications)",
             options=DISAMBIG_COMMON + [
                 Option("shots_file", str, None, "JSONL records with gold.dqs to pick k-shot examples from by "
                        "question similarity [default: built-in examples]", flag="--shots"),
                 Option("k_shots", int, 3, "examples per prompt", min=0),
                 Option("encoder", str, None, "--shots: bi-encoder that embeds questions to pick the nearest shots "
                        "[default: sentence-transformers/all-MiniLM-L6-v2]", env="CQ_MODEL_ENCODER"),
                 Option("tree", bool, False, "expand every DQ again, breadth first (Tree of Clarifications)"),
                 Option("max_nodes", int, 10, "stop at this many valid DQ nodes", min=1),
                 Option("max_depth", int, 2, "--tree: deepest level of a DQ node (1 = plain rac)", min=1),
                 Option("max_failures", int, 3, "--tree: stop after this many expansions in a row that add no "
                        "valid node", min=1),
                 Option("prune", bool, False, "drop nodes whose answer the model judges no answer (True/False)"),
                 Option("reuse_tree", bool, False, "--prune: prune the tree an earlier --tree run wrote"),
                 Option("reranker", str, None, "--tree: cross-encoder that reranks the record's passages per DQ "
                        "[default: cross-encoder/ms-marco-MiniLM-L-12-v2]", env="CQ_MODEL_RERANKER"),
                 Option("rerank_depth", int, 20, "--tree: passages of the record reranked for each DQ", min=1)])
    register("toc", _toc, options=TOC_OPTIONS,
             help="Tree of Clarifications as its released code runs it: verify each pair during growth, restarts, "
                  "the long answer at the end")


TOC_OPTIONS = [
    Option("model", str, LLM, "a causal LM"),
    Option("n_passages", int, 5, "passages shown per expansion: the question's pool reranked for the node, top N",
           min=1, flag="--passages"),
    Option("shots_file", str, None, "JSONL records with gold.dqs and gold.long_answers (`cq convert asqa` train) "
           "to pick demos from by kNN [default: built-in demos]", flag="--shots"),
    Option("k_shots", int, 5, "demos per prompt (nearest last)", min=0),
    Option("encoder", str, None, "bi-encoder for the demos' kNN, L2 on raw vectors "
           "[default: sentence-transformers/all-MiniLM-L6-v2]", env="CQ_MODEL_ENCODER"),
    Option("reranker", str, None, "cross-encoder that reranks the pool per node and picks the verification "
           "evidence [default: cross-encoder/ms-marco-MiniLM-L-12-v2]", env="CQ_MODEL_RERANKER"),
    PROMPT,
    Option("max_nodes", int, 10, "valid nodes before growth stops (checked before each expansion; the long "
           "answer uses the first N)", min=1),
    Option("max_depth", int, 3, "deepest level of a node (root 0); nodes on it are not expanded", min=1),
    Option("max_pops", int, 16, "queue pops per question, skipped too-deep nodes included", min=1),
    Option("max_restarts", int, 3, "re-queue the root and every valid node when the queue empties, at most N "
           "times", min=1),
    Option("unprune_after", int, 10, "a failed expansion after this many pops (or N restarts) turns "
           "verification and dedup off", min=1),
    Option("verify", bool, True, "verify each new pair during growth (and prune the demo and passage pools); "
           "off: the paper's RAC+TS", flag="--verify/--no-verify"),
    Option("verify_rule", str, "generate", "generate: keep iff the greedy completion contains True; logprob: "
           "log p(True) > log p(False)", choices=("generate", "logprob")),
    Option("evidence_match", str, "tokens", "which shown passages hold the answer for the evidence: tokens "
           "(the answer's token sequence) or chars (each character, as the released code calls it)",
           choices=("tokens", "chars")),
    Option("demo_f1", float, 0.8, "a demo whose gold answer matches a generated one above this token F1 leaves "
           "the question's demo pool", min=0),
    Option("temperature", float, 0.7, "expansion sampling temperature (0: greedy)", min=0),
    Option("top_p", float, 1.0, "expansion nucleus sampling", min=0, max=1),
    Option("max_new_tokens", int, 300, "tokens per expansion", min=1),
    Option("verify_max_new_tokens", int, 300, "tokens per verification (greedy)", min=1),
    Option("answer_max_new_tokens", int, 300, "tokens of the long answer (greedy)", min=1),
    Option("long_answer", bool, True, "write the long answer (record key long_answer) at the end of the run",
           flag="--long-answer/--no-long-answer"),
]


def _toc(config, **options):
    from .toc_run import toc_disambiguator

    return toc_disambiguator(config, **options)


def _disambiguator(method):
    def factory(config, **options):
        from .disambiguate import disambiguator

        return disambiguator(method, config, **options)

    return factory


@hookimpl
def register_formats(register):
    from .. import formats

    for name, reader in {**formats.QUESTION_FORMATS, **formats.CORPUS_FORMATS}.items():
        register(name, _format(reader), help=formats.DESCRIPTIONS.get(name, ""), options=[])


def _format(reader):
    def factory(path):
        return reader(path)

    return factory
