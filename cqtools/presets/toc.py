"""Tree of Clarifications (Kim et al., EMNLP 2023) with the budgets of its released code.

Not yet the released algorithm: the values below carry over what cq's ``rac`` tree can already
express (budgets, depth, passages, lengths); every remaining departure is listed, by impact, in
``departures`` and docs/audit/toc-clam.md §4 (the verify-during-growth loop, its evidence rule,
the dsp prompt layout with kNN demos and long answers, sampling at 0.7, restarts, ToC's dedup rule,
pool pruning, the few-shot long answer are open work of issue 23).
"""
from __future__ import annotations

from .base import Preset, Setting

CODE = "gankim/tree-of-clarifications @75a3ddd"
PARTIAL = "verification runs after the tree is grown, not during growth (run_toc.py:229-247); open"

PRESET = Preset(
    name="toc",
    help="Tree of Clarifications: the released code's budgets on cq's rac tree (the algorithm's departures are "
         "listed in docs/methods.md; not yet ToC as run)",
    paper="../shared/papers/tree-of-clarifications.txt (Kim et al., EMNLP 2023)",
    code=CODE,
    settings=(
        Setting("disambiguate", "method", "rac", "§3.2: retrieval-augmented clarification, one expansion per node",
                "cq's own prompt layout (N. question Answer: a), not dsp's DQ/DA blocks with a format description",
                setting="expansion method"),
        Setting("disambiguate", "tree", True, "§3.2; run_toc.py:204-254: BFS tree of clarifications",
                "no restarts (run_toc.py:209-212); stops after 3 failed expansions instead", setting="tree search"),
        Setting("disambiguate", "prune", True, "§3.2; run_toc.py:235-243 (--verify): self-verification", PARTIAL +
                "; cq scores log p(True) - log p(False) over the node's own passage with the DQ shown, ToC generates "
                "and keeps a completion containing True over the cross-encoder's top answer-holding passage, "
                "without the DQ", setting="pruning"),
        Setting("disambiguate", "max_nodes", 10, "§5, App. C.4; run_toc.py:138,205",
                "cq stops at exactly 10; the released loop adds all verified pairs of the last expansion (may pass "
                "10) and keeps the first 10 for the answer", setting="node budget"),
        Setting("disambiguate", "max_depth", 3, "run_toc.py:139,216-217 (depth 3 with the root at 1)",
                "same levels: cq counts the root as 0, so nodes exist at levels 1-3 and levels 0-2 are expanded",
                setting="depth"),
        Setting("disambiguate", "n_passages", 5, "App. A.3; run_toc.py:142 (top 5 reranked)",
                "passages shown as 'Passage: title: text', not '[i] «title | text»'", setting="passages per prompt"),
        Setting("disambiguate", "passage_words", 1000, "dsp/templates/utils.py:4-14: passages are not cut",
                "a cap of 1000 words stands for no cut", setting="passage length"),
        Setting("disambiguate", "rerank_depth", 1000, "run_toc.py:61-64: the whole pool is reranked per node",
                "the root reads the record's passages in their given order (released: reranked for the AQ); keep "
                "the whole retrieved pool on the record (no `cq rerank --top 5` before)", setting="reranked pool"),
        Setting("disambiguate", "k_shots", 5, "App. A.3; run_toc.py:136 (--n_shot 5)",
                "kNN needs --shots FILE (ASQA train-like records); demos hold at most 4 pairs and no long answer; "
                "cosine instead of L2; without --shots the 3 built-in shots are used", setting="demonstrations"),
        Setting("disambiguate", "max_new_tokens", 300, "App. A.3; dsp/modules/gpt3.py:60-67",
                "greedy decoding; the released code samples at temperature 0.7 (run_toc.py:135)",
                setting="expansion length"),
        Setting("answer", "mode", "long", "App. C.4; run_toc.py:259-261", "zero-shot with cq's instruction; the "
                "released code uses the expansion template with 5 kNN demos and their gold long answers",
                setting="long answer"),
        Setting("answer", "n_passages", 5, "run_toc.py:259 (top 5 of the pool reranked for the AQ)",
                "cq prefers passages holding the answers (the paper's wording), the released code does not",
                setting="long-answer passages"),
        Setting("answer", "max_new_tokens", 300, "App. A.3; run_toc.py:75,261", setting="long-answer length"),
    ),
    departures=(
        "Open (issue 23, by impact; docs/audit/toc-clam.md §4): verification during growth with ToC's evidence "
        "rule and generated True/False verdicts; dsp's prompt layout (instruction, 5 kNN demos with all DQ/DA "
        "pairs and long answers, the format-description block, numbered title | text passages); sampling at "
        "temperature 0.7 with a per-question prompt memo (dsp's cache); restarts and the pruning switch-off; "
        "ToC's dedup rule (same question, answer containing an earlier one); demo- and passage-pool pruning; the "
        "few-shot long answer.",
        "Retrieval: ColBERTv2 + Bing (over 200 passages) in the paper; cq's BM25/dense/hybrid over the local "
        "corpus.",
        "Model: text-davinci-003 in the released code; any causal LM or OpenAI-compatible server here.",
    ),
)
