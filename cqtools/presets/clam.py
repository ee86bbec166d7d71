"""CLAM (Kuhn, Gal, Farquhar 2022) as its paper describes it (no code was released).

Every value cites the paper (../shared/papers/clam.txt): Algorithm 1, §3 (prompts), §4 (oracle),
§5.1 (setup, threshold, baselines). The pipeline, one model for every stage::

    cq detect --preset clam | cq gen-cq --preset clam | cq oracle --preset clam \\
      | cq answer --preset clam | cq score --preset clam
"""
from __future__ import annotations

from .base import FLAG, LAYOUT, MACHINE, Preset, Setting

OWN_WORDS = "cq's own wording in the paper's structure (templates/clam.txt); --prompt FILE brings the paper's text"

PRESET = Preset(
    name="clam",
    help="CLAM: few-shot log p(True) detection at -0.3, closed-book zero-shot CQ, an LM user's reply, "
         "the answer to the dialogue",
    paper="../shared/papers/clam.txt (Kuhn, Gal, Farquhar, arXiv 2212.07769)",
    code="none released",
    settings=(
        Setting("detect", "method", "clam", "§3: 5 shots (2 ambiguous, 3 not, in the order amb, not, not, not, amb), "
                "no instruction, label words True./False., score = log p(next token = True)",
                "own shot questions and " + OWN_WORDS, setting="ambiguity detection", stays=FLAG),
        Setting("detect", "threshold", -0.3, "§5.1: τ = -0.3, tuned on held-out data for QA accuracy",
                "tuned for text-davinci-002, which is not offline; re-tune for the model at hand (cq score --task "
                "detect --sweep, or end-to-end accuracy on a held-out split) and give it as --threshold",
                setting="decision threshold", stays=MACHINE),
        Setting("gen-cq", "method", "clam", "§3, Algorithm 1 line 4: zero-shot, the question followed by one "
                "sentence asking for a clarifying question; closed-book", OWN_WORDS + "; greedy, 40 tokens, one "
                "line (decoding not stated)", setting="clarifying question", stays=FLAG),
        Setting("oracle", "method", "clam", "§4, Figure 3: an LM given the precise question as privileged "
                "information, the ambiguous question and the CQ writes the user's reply",
                "the prompt layout is not given in the paper: " + OWN_WORDS + "; greedy, one line",
                setting="simulated user", stays=FLAG),
        Setting("answer", "mode", "dialogue", "Algorithm 1 lines 1 and 7, §5.1: the model answers the whole "
                "dialogue under the conversation preamble; unclarified questions get its direct answer",
                "preamble and turn labels in " + OWN_WORDS + "; greedy, one line", setting="final answer", stays=FLAG),
        Setting("answer", "n_passages", 0, "§2, §5.1: closed-book (no retrieval); --passages N makes it open-book "
                "(a cq extension)", setting="passages shown", applies=LAYOUT),
        Setting("score", "task", "clam", "§5.1: accuracy = a reference answer occurs in the model's answer",
                setting="metric"),
        Setting("score", "lam", 0.8, "§5.1: adjusted accuracy multiplies by 0.8 when an unambiguous question "
                "got a CQ (Table 3 sweeps 0.5-1.0)", setting="adjusted-accuracy penalty"),
    ),
    departures=(
        "Data: the paper uses 200 TriviaQA-derived pairs of an ambiguous and a precise question; cq runs on "
        "AmbigNQ/ASQA records with one evaluation record per gold DQ (`cq oracle --expand`).",
        "Model: text-davinci-002 in the paper; any causal LM or OpenAI-compatible server here (the -0.3 "
        "threshold is tuned for the paper's model).",
        "Prompting baseline (§5.1) is the CQ method clam-prompting: a reply ending in '?' counts as asking "
        "(the paper does not say how asking was detected).",
    ),
)
