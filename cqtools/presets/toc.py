"""Tree of Clarifications (Kim et al., EMNLP 2023) as its released code runs it.

Sources: the paper (``§``), and the released code at ``75a3ddd`` with the two repairs it needs to run
(docs/audit/toc-clam.md, "Two facts about the release"); the traces in fixtures/released/toc/ show
the loop call by call. docs/methods-toc.md lists what still differs, and why.
"""
from __future__ import annotations

from .base import COMMAND, FLAG, MACHINE, Preset, Setting

CODE = "gankim/tree-of-clarifications @75a3ddd"
AT = " @75a3ddd"


def _d(option, value, source, differs="", setting="", stays=""):
    return Setting("disambiguate", option, value, source, differs, setting, stays=stays)


SETTINGS = (
    Setting("retrieve", "method", "hybrid", "paper, retrieval step; toc/rac.py:5-8" + AT + ": two retrieval systems "
            "(ColBERT over Wikipedia and the Bing search engine), 'over 200 passages by combining' them",
            "cq's two retrievers are BM25 and the index's dense encoder (cq index --dense), not ColBERTv2 and Bing: "
            "neither ColBERTv2's Wikipedia index nor Bing is reachable offline", "retrievers pooled", stays=MACHINE),
    Setting("retrieve", "fusion", "pool", "paper, retrieval step: the systems' passages are combined, then "
            "reranked for each node",
            "the union of cq's two searchers' top --hits (up to 200; ColBERTv2 and Bing are not offline), ordered by "
            "reciprocal rank until each node's rerank", "how the pool is formed", stays=MACHINE),
    Setting("retrieve", "hits", 100, "--top_k_docs, run_toc.py:141 and toc/rac.py:5-8" + AT + " (ColBERTv2, plus Bing)",
            "cq's searcher over the user's index instead of ColBERTv2 on Wikipedia; no Bing passages offline. "
            "Keep the pool on the record (no `cq rerank --top`): the method reranks it for each node",
            "passages in the pool", applies=COMMAND, stays=MACHINE),
    _d("method", "toc", "§3.2; run_toc.py:190-261" + AT,
       "the loop is the released one; cq's prompt wording is its own (same slots, order, separators, labels): "
       "--prompt FILE gives other wording", "disambiguation method", FLAG),
    _d("verify", True, "README command (--verify); run_toc.py:229-247" + AT,
       "", "verify each pair during growth; demo and passage pool pruning"),
    _d("verify_rule", "generate", "run_toc.py:242" + AT + "; App. C.3",
       "greedy decoding of a local model (or an API at temperature 0) instead of text-davinci-003, which is retired "
       "and not reachable offline", "keep a pair iff the completion contains True", MACHINE),
    _d("evidence_match", "chars", "toc/pruning.py:17-23, dsp/primitives/demonstrate.py:129-134" + AT,
       "the release's value, against the paper: the released call passes the answer string where dsp expects a "
       "list, so each character is matched and an answer with a space or an 'a' is held by every passage; "
       "--evidence-match tokens gives the paper's rule (App. A.3), the method's default",
       "which shown passages hold the answer (evidence)", FLAG),
    _d("n_passages", 5, "--top_k_reranked, run_toc.py:142" + AT + "; App. A.3",
       "the pool is cq's retrieval (keep >= 100 passages on the record), not ColBERTv2 + Bing (not offline)",
       "passages per prompt", MACHINE),
    _d("k_shots", 5, "--n_shot, run_toc.py:136" + AT + "; App. A.3",
       "built-in demos unless --shots FILE gives the release's pool (ASQA train from `cq convert asqa`)",
       "demos per prompt", FLAG),
    _d("encoder", "sentence-transformers/all-MiniLM-L6-v2", "dsp/modules/sentence_vectorizer.py:42-45" + AT +
       " (cq: exact L2 over the pool in numpy, the ranking of the release's Faiss flat index)", "", "kNN demo encoder"),
    _d("reranker", "cross-encoder/ms-marco-MiniLM-L-12-v2", "dsp/modules/sbert.py:5" + AT + "; §3.1",
       "", "cross-encoder"),
    _d("tie_order", "argsort", "toc/retrieval/combine.py:5" + AT + ": np.argsort(passages_cs_scores)[::-1] over "
       "the scores' list of floats (dsp/modules/sbert.py:16, .tolist()): equal scores come out later first in a "
       "short list",
       "numpy's default sort is unstable: in a list over 16 passages ties come out in the installed numpy's order "
       "(numpy 2.4 here: 40 ties come out 39, 35, 38, 37, ...), which need not be that of the release's numpy "
       "1.24.3 (environment.yml:115; scipy 1.17 here needs numpy >= 1.26.4); --tie-order earlier keeps pool order",
       "equal reranker scores", MACHINE),
    _d("max_nodes", 10, "--max_nodes, run_toc.py:138" + AT + "; §5", "", "valid nodes"),
    _d("max_depth", 3, "--max_depth, run_toc.py:139,216" + AT + " (cq counts the root as level 0: nodes on levels "
       "1-3, levels 0-2 expanded, the code's depth 1-4 and 1-3: the same tree)", "", "deepest level"),
    _d("max_pops", 16, "run_toc.py:206-208 (n_expansions <= 15)" + AT, "", "queue pops"),
    _d("max_restarts", 3, "--max_trials, run_toc.py:140,204-212" + AT, "", "restarts"),
    _d("unprune_after", 10, "run_toc.py:250-254" + AT, "", "pops after which a failed expansion ends pruning"),
    _d("demo_f1", 0.8, "run_toc.py:103" + AT, "", "demo removal threshold"),
    _d("temperature", 0.7, "--temperature, run_toc.py:135,221" + AT,
       "seeded local sampling (or the API with a per-prompt seed); the same prompt in the same question "
       "gets the same text, as dsp's request cache gives it (the API's sampling is not reachable offline)",
       "expansion temperature", MACHINE),
    _d("top_p", 1.0, "dsp/modules/gpt3.py:60-67" + AT + "; App. A.3", "", "expansion top-p"),
    _d("max_new_tokens", 300, "dsp/modules/gpt3.py:60-67" + AT + "; App. A.3",
       "a local model (text-davinci-003 is not offline) also stops at the next block (\\n\\n---, \\n\\nQuestion:, "
       "\\n\\nContext:), which the parse drops", "expansion tokens", MACHINE),
    _d("verify_max_new_tokens", 300, "dsp/modules/gpt3.py:60-67" + AT,
       "a local model (text-davinci-003 is not offline) stops at a new Context:/Question:/Proposed Answer: "
       "line", "verification tokens", MACHINE),
    _d("answer_max_new_tokens", 300, "run_toc.py:261, dsp/modules/gpt3.py:60-67" + AT, "", "long-answer tokens"),
    _d("long_answer", True, "run_toc.py:256-264" + AT, "", "write the long answer in the same run"),
)

PRESET = Preset(
    name="toc",
    help="Tree of Clarifications: verify-during-growth tree of DQ/answer pairs, then a few-shot long answer",
    paper="../shared/papers/tree-of-clarifications.txt (Kim et al., EMNLP 2023)",
    code=CODE,
    settings=SETTINGS,
    departures=(
        "Model: a local causal LM or an OpenAI-compatible server instead of text-davinci-003 (run_toc.py:132).",
        "Retrieval: cq's searchers over the record's pool instead of ColBERTv2 (MS MARCO) top 100 plus Bing "
        "passages (toc/rac.py:5-8); run `cq retrieve --hits 100` and keep the pool (no `cq rerank --top 5`).",
        "Prompt wording: cq's own sentences for the instruction, the format description and the verification "
        "instruction (cqtools/stages/templates/toc.txt); --prompt FILE can supply others.",
        "dsp's follow-up call for an expansion without a long answer (dsp/primitives/predict.py:94-116) is not "
        "made: it fills only the unused long answer of that expansion, never the pairs.",
        "An expansion that parses to no pair under --verify crashes the released code (F1 over an empty list, "
        "run_toc.py:103); cq removes nothing and goes on.",
        "Sampling: a seeded sampler per (seed, question, prompt) stands in for the API's sampling plus dsp's "
        "request cache; the texts differ from the API's, the repetition pattern is the same.",
    ),
)
