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

    register("classifier", detect.classifier_detector,
             help="P(ambiguous) from a `cq train detect` model over question + passages (AskCQ)",
             options=[Option("model", str, None, "a `cq train detect` directory [default: $CQ_MODELS/detect when "
                             "trained, else the classifier cq ships]"),
                      Option("n_passages", int, None, "top passages shown to the model (0: none) [default: as many "
                             "as it was trained with]", min=0, flag="--passages"),
                      _threshold(0.5)])
    register("llm", detect.load_llm_detector, help="few-shot log p(True) - log p(False) (CLAM)",
             options=[Option("model", str, LLM, "a causal LM"), _threshold(0.0), PROMPT])
    register("answers", detect.answers_detector, help="distinct answers from `cq answer --mode multi` (AskCQ)",
             options=[_threshold(1.0)])
    from . import detect_diverse
    register("diverse", detect_diverse.diverse_detector,
             help="the classifier's P(ambiguous) when the reader's answers give two supported options or more, "
                  "else 0 (AskCQ's two detectors together)",
             options=[Option("model", str, None, "a `cq train detect` directory [default: as classifier]"),
                      Option("n_passages", int, None, "top passages shown to the classifier [default: as "
                             "classifier]", min=0, flag="--passages"), _threshold(0.5),
                      Option("min_rerank_score", float, 0.0, "answers read from a passage the reranker scored "
                             "under this do not count")])
    register("tree", detect.tree_detector, help="surviving disambiguations of `cq disambiguate --tree` (ToC)",
             options=[_threshold(1.0)])
    register("always", _constant("always"), help="baseline: always ambiguous", options=[_threshold(0.5)])
    register("never", _constant("never"), help="baseline: never ambiguous", options=[_threshold(0.5)])
    register("clam", clam.clam_detector,
             help="CLAM as in its paper: 5 shots without instruction, score log p(True) alone",
             options=[Option("model", str, LLM, "a causal LM"), _threshold(clam.THRESHOLD), PROMPT])
    register("combined", detect_combined.combined_detector,
             help="calibrated P(ambiguous) over classifier, retrieval and reader signals (a `cq train combiner` model)",
             options=[Option("model", str, None, "a `cq train combiner` directory (required)"),
                      _threshold(None)])  # None: the combiner's own


def _constant(name):
    from .detect import constant_detector

    def factory(threshold):
        return constant_detector(name, threshold)

    return factory


@hookimpl
def register_cq_methods(register):
    from . import clam, gen_cq

    register("from-dqs", gen_cq.from_dqs_method,
             help="silver CQ built from gold.dqs (reads gold: an upper bound / training data)", options=[TWO_OPTIONS])
    register("llm", gen_cq.load_llm_method, help="few-shot prompt (CAmbigNQ style), or CLAM's zero-shot one",
             options=[Option("model", str, LLM, "a causal LM"), PASSAGES,
                      Option("zero_shot", bool, False, "CLAM's zero-shot prompt; the free-form CQ is kept as written"),
                      CQ_TOKENS, CQ_OPTIONS, PROMPT, WITH_ANSWERS, MAX_PASSAGE_TOKENS, NUM_BEAMS,
                      Option("primer", bool, True, "end the few-shot prompt with the CQ's first word (\"Which\"); "
                             "off: the model writes the whole CQ, other heads (\"In which ...\") included",
                             flag="--primer/--no-primer"), TWO_OPTIONS])
    register("clam", clam.clam_cq_method,
             help="CLAM as in its paper: closed-book, zero-shot, the question and one sentence asking for a "
                  "clarifying question (free-form CQ kept as written)",
             options=[Option("model", str, LLM, "a causal LM"), CQ_TOKENS, PROMPT])
    register("clam-prompting", clam.prompting_method,
             help="CLAM's prompting baseline: the model answers under a preamble inviting clarification; a reply "
                  "ending in '?' is its CQ, otherwise nothing is asked (use with --all)",
             options=[Option("model", str, LLM, "a causal LM"),
                      Option("max_new_tokens", int, clam.ANSWER_TOKENS, "tokens generated", min=1), PROMPT])
    register("seq2seq", gen_cq.load_seq2seq_method, help="a generator from `cq train gen-cq` (AskCQ)",
             options=[Option("model", str, None, "a `cq train gen-cq` directory (required)"), PASSAGES,
                      WITH_ANSWERS, CQ_TOKENS, CQ_OPTIONS, MAX_PASSAGE_TOKENS, NUM_BEAMS,
                      Option("input_layout", str, None, "cq: \"AQ [SEP] A1 | A2 [SEP] passages\"; askcq: AskCQ's "
                             "CQDataset.py layout (question, each answer, each passage closed by the tokenizer's "
                             "separators; BART's) [default: the layout the model was trained on, its cq_train.json]",
                             choices=("cq", "askcq")), TWO_OPTIONS])
    from . import gen_cq_answers
    register("pred-answers", gen_cq_answers.pred_answers_method,
             help="a template over the reader's distinct supported answers or their passages' titles (AskCQ's "
                  "Predicted-Answers input; no LM; reads `cq answer --mode multi`'s answers, else reads them)",
             options=[Option("max_options", int, 4, "at most this many options", min=2),
                      Option("option_text", str, "auto", "each option: its passage's title, the answer, or auto "
                             "(titles when they differ, else answers)", choices=gen_cq_answers.OPTION_TEXTS),
                      Option("min_rerank_score", float, 0.0, "answers read from a passage the reranker scored under "
                             "this are not offered"),
                      Option("min_score", float, None, "answers the reader scores under this are not offered "
                             "(extractive: margin over no-answer) [default: no floor]"),
                      Option("fallback", str, "titles", "fewer than two answers: offer the relevant passages' "
                             "titles, or ask nothing (none)", choices=("titles", "none")), TWO_OPTIONS])


VERIFY = [Option("verify", bool, False, "REFUEL LM verification: add verify_score = log p(answer | passages, question)"),
          Option("verify_rule", str, "threshold", "with --verify: threshold (cq's: drop answers scoring under "
                 "--verify-threshold given the question they answered, possibly all) or refuel (REFUEL's: score each "
                 "(DQ, answer) pair with the answer's end, keep each answer's best DQ, drop pairs at or under the "
                 "threshold, keep the best pair when none is left)", choices=("threshold", "refuel")),
          Option("verify_threshold", float, -8.0, "with --verify, answers scoring below this are dropped")]
BUDGET = Option("max_passage_tokens", int, None, "evidence budget: read passages in order while the question and "
                "the passages fit this many tokens of the reader's tokenizer (0: the reader model's whole input "
                "length); replaces --passages, which then only caps the count [default: --passages]", min=0)


@hookimpl
def register_answer_modes(register):
    from . import answer, clam
    from .answer.support import MIN_RERANK
    from .rerank import DEFAULT_RERANKER

    reranker = Option("reranker", str, DEFAULT_RERANKER, "cross-encoder that reranks the passages for each revised "
                      "question (cq) or DQ (dqs)", env="CQ_MODEL_RERANKER")
    depth = Option("rerank_depth", int, 20, "passages reranked per revised question (cq) or DQ (dqs)", min=1)
    round_trip = [Option("round_trip", bool, False, "REFUEL round trip: re-ask until no answer is new (see "
                         "--round-trip-method)"),
                  Option("round_trip_method", str, "title", "with --round-trip: title (cq's: re-ask each new answer's "
                         "question as \"Q [title]\") or refuel (REFUEL's: write a DQ for every answer, re-ask every DQ "
                         "over the same passages; the record gets the (DQ, answer) pairs as dqs)",
                         choices=("title", "refuel")),
                  Option("max_rounds", int, 2, "cap on --round-trip rounds (refuel: passes after the first)", min=1),
                  Option("qd_model", str, None, "--round-trip-method refuel: the LM that writes the DQs [default: "
                         "the generative reader's LM, else cq disambiguate's]")]
    register("single", answer.qa_mode("single"), help="one answer", options=round_trip + VERIFY + [MIN_RERANK])
    register("cq", answer.qa_mode("cq"), help="one answer per option of the record's \"cq\"",
             options=[Option("selected", bool, False, "answer only the record's \"selected_option\" (a user's or "
                             "an oracle's)"), reranker, depth] + VERIFY + [MIN_RERANK])
    register("multi", answer.qa_mode("multi"), help="every distinct answer (AmbigQA)",
             options=round_trip + VERIFY + [MIN_RERANK])
    register("dqs", answer.qa_mode("dqs"),
             help="one answer per entry of the record's \"dqs\" (cq disambiguate), read from passages retrieved "
                  "for that DQ (AmbigQA's DISAMBIG-FIRST)",
             options=[Option("index", str, None, "the index to retrieve from for each DQ (as cq retrieve --index)",
                             env="CQ_INDEX"),
                      Option("retriever", str, "bm25", "the searcher (cq retrieve --method): bm25, dense or hybrid"),
                      Option("hits", int, 100, "passages retrieved per DQ", min=1), reranker, depth])
    register("dialogue", clam.dialogue_mode,
             help="CLAM's final answer: an LM answers the conversation (question, the record's cq text, its "
                  "clarification_answer), or the question alone when none was asked",
             options=[Option("n_passages", int, 0, "top passages shown before the conversation (0: closed-book, "
                             "as in CLAM)", min=0, flag="--passages"),
                      Option("max_new_tokens", int, clam.ANSWER_TOKENS, "tokens of the answer", min=1),
                      Option("preamble", str, "default", "the conversation preamble: default, or prompting (the "
                             "prompting baseline's, which invites clarification)", choices=("default", "prompting")),
                      PROMPT])
    register("long", answer.long_mode, help="a long answer from the record's \"dqs\" (cq disambiguate; ToC)",
             options=[Option("n_passages", int, None, "top passages in the prompt [default: 5]", min=1,
                             flag="--passages"),
                      Option("max_new_tokens", int, None, "tokens of the long answer [default: 160]", min=1),
                      PROMPT])


@hookimpl
def register_readers(register):
    from .answer import extractive, reader

    register("extractive", extractive.extractive_reader,
             help="a span model from `cq train reader` (--model DIR): the best-scoring passage spans, several "
                  "distinct ones in multi mode",
             options=[Option("model", str, None, "a span (question-answering) model"),
                      Option("n_passages", int, None, "top passages read per question [default: 3]", min=1,
                             flag="--passages"), BUDGET,
                      Option("span_order", str, "rank", "which spans answer first: rank (each passage's best span, "
                             "passages in the order given, i.e. reranked; then the rest by score) or score (by span "
                             "score alone)", choices=("rank", "score")),
                      Option("question_spans", str, "skip", "spans made only of the question's own words: skip or "
                             "keep", choices=("skip", "keep"))])
    register("generative", reader.generative_reader,
             help="a prompted LM (causal or seq2seq), answers grounded in passage spans",
             options=[Option("model", str, reader.DEFAULT_READER, "a causal or seq2seq LM"),
                      Option("kind", str, "auto", "architecture (auto: from the model config)",
                             choices=("auto", "causal", "seq2seq")),
                      Option("n_passages", int, None, "top passages shown [default: 3]", min=1, flag="--passages"),
                      Option("passage_chars", int, 600, "each passage cut before this many characters (0: whole)",
                             min=0),
                      Option("max_new_tokens", int, 16, "tokens per answer (multi: three times as many)", min=1),
                      Option("grounding", str, "span", "snap answers to passage spans, or none",
                             choices=("span", "none")),
                      Option("max_candidates", int, 30, "span grounding: spans scored when the generation is "
                             "unusable", min=1), PROMPT, BUDGET])


@hookimpl
def register_oracles(register):
    from . import clam, oracle

    register("overlap", oracle.overlap_oracle, help="the option that best overlaps what the DQ adds to the question",
             options=[])
    register("clam", clam.clam_oracle,
             help="CLAM's oracle: the model writes the user's reply from the intended question, the question and "
                  "the CQ's text (never picks an option)",
             options=[Option("model", str, oracle.DEFAULT_MODEL, "a causal LM"),
                      Option("max_new_tokens", int, 32, "tokens of the reply", min=1), PROMPT])
    register("llm", oracle.llm_oracle,
             help="the model, with the DQ in its prompt, picks the option (or writes a short reply to a free-form CQ)",
             options=[Option("model", str, oracle.DEFAULT_MODEL, "a causal LM"),
                      Option("max_new_tokens", int, 16, "tokens of a free-form reply", min=1), PROMPT])


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
