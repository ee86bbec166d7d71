"""REFUEL (Gao et al., ACL 2021): answer prediction, question disambiguation for every answer, the
round trip over every DQ until no new answer appears, and LM verification of (DQ, answer) pairs, as the
paper and the released code (amzn/refuel-open-domain-qa @159090e) run them."""
from __future__ import annotations

from .base import COMMAND, FLAG, LAYOUT, MACHINE, Preset, Setting  # noqa: F401

CODE = "amzn/refuel-open-domain-qa @159090e"
PAPER = "../shared/papers/refuel.txt (Gao, Zhang, Chang, Wang, ACL 2021)"



def SCHEDULE(command: str, script: str) -> tuple:
    """REFUEL's optimiser schedule for a trainer ``command``, set in ``script``: warm-up over a tenth of the steps,
    then linear decay to 0 at the last; weight decay 0.01 but on biases."""
    return (
        Setting(command, "warmup_ratio", 0.1, f"{script} @159090e: --warmup_proportion=0.1; run.py:241-245: "
                "int(num_training_steps * 0.1) warm-up steps", setting="warm-up (share of the steps)",
                applies=COMMAND),
        Setting(command, "weight_decay", 0.01, f"{script} @159090e: --weight_decay=0.01", setting="weight decay",
                applies=COMMAND),
        Setting(command, "no_decay", "bias-layernorm", "run.py:222-226 @159090e: no decay on parameters named "
                "'bias' or 'LayerNorm.weight' (BART's layer norms are named otherwise, so only its biases)",
                setting="spared from weight decay", applies=COMMAND),
        Setting(command, "decay_steps", None, "run.py:241-245 @159090e: num_training_steps = num_train_epochs x "
                "int(questions / train_batch_size), the run's own length",
                "cq's run counts its steps over targets (one per combination of found aliases, each a step's "
                "example), REFUEL's over questions (one target drawn per question, DataLoader.py:60-63): --decay-steps "
                "N gives REFUEL's horizon", setting="decay horizon (steps)", applies=COMMAND, stays=FLAG),
    )


REFUEL = Preset(
    name='refuel',
    help='REFUEL: answers from as many passages as fit, a DQ for every answer (from the answer, the question and the passages; beam 4), every DQ re-asked until no new answer appears, (DQ, answer) pairs verified with keep-best',
    paper=PAPER,
    code=CODE,
    settings=(
        # --- retrieve / rerank ---

        # --- detect ---

        # --- answer ---
        Setting("answer", "mode", "multi", "§2.2: answer prediction writes one or several answers; run.py:1093-1109 @159090e",
                setting="answer mode"),
        Setting("answer", "max_passage_tokens", 0, "§2.1, §3.1: Fusion-in-Decoder over the top K=100 reranked passages; "
                "README.md:62, scripts/round_trip/round_trip_generation.sh (TOP_K_PASSAGES=100) @159090e",
                "a prompted LM cannot fuse: one prompt reads as many reranked passages as fit the reader's input (0 = "
                "its context length); FiD's 100 passages (about 16,000 subwords) fit no single context. REFUEL's "
                "FiD reader itself: `cq train fid --preset refuel`, read with `--reader fid --model DIR`. "
                "meta.passages_read.answer says how many were read", setting="evidence budget (tokens)", applies=LAYOUT,
                stays=FLAG),
        Setting("answer", "passage_chars", 0, "QAInferenceData.py:229-236 @159090e: each 100-word passage is read "
                "whole (question + passage in 32 + 128 tokens)", setting="passage text shown", applies=LAYOUT),
        Setting("answer", "grounding", "none", "§2.2: answer prediction generates the answers with a "
                "Fusion-in-Decoder seq2seq model, never snapped to a span: answers stay as generated, where cq's "
                "default snaps one to a passage span", setting="answer grounding", applies=LAYOUT),
        Setting("answer", "round_trip", True, "§2.3: round-trip prediction", setting="round trip"),
        Setting("answer", "round_trip_method", "refuel", "§2.3; run.py:1093-1122, QAInferenceData.py:114-117, "
                "scripts/round_trip/round_trip_generation.sh (IS_REPLACE=0) @159090e: each pass writes a DQ for every "
                "answer it found, conditioned on the prompt question, and feeds every DQ written so far back to "
                "answer prediction over the same passages",
                "the DQs are written by cq disambiguate's qd prompt (an LM) in REFUEL's input layout (qd_layout "
                "below): REFUEL's QD BART is not offline (--qd-model takes any LM)", setting="round trip",
                stays=MACHINE),
        Setting("answer", "qd_one_answer", "write", "QGInferenceData.py:136-143 @159090e: a DQ is written for every "
                "(prompt question, answer) pair of the pass, one answer or many (cq disambiguate's rule keeps the "
                "question for a record with one answer)", setting="DQ for a pass's only answer"),
        Setting("answer", "round_trip_match", "raw", "run.py:1098-1107 @159090e: each pass's answers are the "
                "stripped strings of the SEP-split predictions, told apart by set(), and (prompt, answer) pairs "
                "likewise; line 1121: the (DQ, answer) pairs merged with the last pass's by set() of raw tuples",
                setting="what makes an answer new"),
        Setting("answer", "qd_layout", "refuel", "QGInferenceData.py:199 @159090e: the QD input is <s> answer <SEP> "
                "prompt question </s> followed by each passage; no other answer is shown",
                "the labels (Answer:/Question:/Passage:), the instruction and the 3 shots are cq's; cq's LM reads "
                "the passages in one prompt where REFUEL's BART encodes each (answer, question, passage) apart: "
                "REFUEL's QD BART is not offline (`cq train qd` trains AmbigQA's layout; --qd-model takes any LM)",
                setting="DQ writer's input", applies=LAYOUT, stays=MACHINE),
        Setting("answer", "qd_num_beams", 4, "run.py:1067-1071 @159090e: the QD model decodes with model.generate("
                "num_beams=4, early_stopping=True)", "the local LM (REFUEL's QD BART is not offline) has no EOS after "
                "the DQ, so cq stops a beam at a newline as well; an API model searches no beams (the row is not "
                "applied to one: meta.preset_rows says so)", setting="DQ writer's beam search", stays=MACHINE),
        Setting("answer", "max_rounds", 9, "README.md:240-243 @159090e (passes 1-9 after pass 0, 'X = 10'); §2.3: "
                "until no new answer appears",
                "cq stops at the first pass that finds no new answer (the paper's rule; with deterministic models the "
                "release's later passes repeat that pass) and verifies the pairs of every pass so far; the release "
                "verifies the pass chosen on dev (README.md:266-270: `Pass=X`, 'a hyperparameter needed to tune'), "
                "whose pairs are every pass's up to X (run.py:1121 merges each pass's pairs with the last's): "
                "--max-rounds X verifies what the release's Pass=X does", setting="passes after the first (cap)",
                stays=FLAG),
        Setting("answer", "verify", True, "§2.3: LM verification", setting="verification"),
        Setting("answer", "verify_rule", "refuel", "Eq. 1; models/lm_filtering.py:32-59 (summed loss over the answer's "
                "tokens and its EOS), QALMFilteringData.py:288-300 (each answer keeps its best DQ) and 655-663 (pairs "
                "with lm_score < Th kept; none kept: the best pair) @159090e",
                "without --verifier-model the verifier is the reader's own LM prompted with the passages and the DQ "
                "(the end it scores: the newline of the reader's answer line, or a seq2seq model's EOS); REFUEL's own, "
                "a separate FiD BART fine-tuned on gold (DQ, answer) pairs (App. A), is `cq train verifier --preset "
                "refuel`, given as --verifier-model DIR; a kept answer keeps its surface text (the release writes the "
                "normalised one)", setting="verification rule", stays=FLAG),
        Setting("answer", "verify_threshold", -6.1, "§2.3: Th = 6.1 on -log p, tuned on dev (QALMFilteringData.py:"
                "654-679 @159090e sweeps 20.5 down to 0.5)",
                "tuned for REFUEL's BART verifier, which --verifier-model DIR gives (`cq train verifier --preset "
                "refuel`); for another verifier re-tune with `make tune-refuel-threshold` (AmbigNQ dev questions the "
                "grid does not score) and give --verify-threshold", setting="verification threshold (log p)",
                stays=FLAG),

        # --- disambiguate ---

        # --- gen-cq ---

        # --- score ---

        # --- train fid (the answer reader's recipe) ---
        Setting("train fid", "model", "facebook/bart-large", "§2.2 and App. A 'Answer Prediction'; "
                "scripts/answer_prediction/train_aq.sh:46 @159090e: --bert_name=bart-large",
                "initialised from BART-large itself: REFUEL first trains it on NQ-open (App. A; train_aq.sh:47 "
                "--checkpoint); train that first with cq on NQ-open records and pass its directory as --model",
                setting="base model", applies=COMMAND, stays=FLAG),
        Setting("train fid", "passages", 100, "§2.2; train_aq.sh:33 @159090e: PSG=100 (top_k_passages)",
                "the passages are the records' own (cq retrieve/rerank), not REFUEL's reranker's (its trained "
                "BERT reranker is not available offline)",
                setting="passages per question", applies=COMMAND, stays=MACHINE),
        Setting("train fid", "max_passage_input_tokens", 160, "QAData.py:712-717 @159090e: question (32 tokens) + "
                "passage (128), each input padded to 160", setting="tokens per question + passage", applies=COMMAND),
        Setting("train fid", "batch_size", 64, "App. A; train_aq.sh:56 @159090e: --train_batch_size=64 (over 8 GPUs, "
                "gradient accumulation 8)", "with fewer GPUs keep the product of --batch-size, --grad-accum and "
                "processes at 64", setting="batch (per process)", applies=COMMAND, stays=FLAG),
        Setting("train fid", "lr", 3e-5, "App. A; train_aq.sh:58 @159090e: --learning_rate=3e-5",
                setting="learning rate", applies=COMMAND),
        *SCHEDULE("train fid", "scripts/answer_prediction/train_aq.sh:59-60"),
        Setting("train fid", "epochs", 30, "App. A; train_aq.sh:63 @159090e: --num_train_epochs=30",
                setting="epochs", applies=COMMAND),
        Setting("train fid", "eval_every", 30, "train_aq.sh:66 @159090e: --eval_period=30; run.py:669-686 keeps "
                "best-model.pt, the best dev F1_ans (AmbigQAData, QAData.py:624, 841); --wait_step=1000000: no early "
                "stop", "each evaluation decodes the --dev records (use --dev-limit on a large dev set)",
                setting="dev evaluation steps", applies=COMMAND, stays=FLAG),
        Setting("train fid", "num_beams", 1, "run.py:1015-1018 @159090e: answers are decoded greedily (num_beams = 1)",
                setting="beam search (cq answer)", applies=COMMAND),
        Setting("train fid", "max_answer_tokens", 63, "train_aq.sh:49 @159090e: --max_answer_length=64, generate's "
                "max_length, which counts the decoder start token: 63 generated", setting="answer tokens",
                applies=COMMAND),

        # --- train verifier (the LM verifier's recipe) ---
        Setting("train verifier", "model", "facebook/bart-large", "§2.3 and App. A 'LM Verification'; "
                "scripts/round_trip/train_verification.sh:37-45 @159090e: --task=qa_noamb_aq --bert_name=bart-large",
                "REFUEL starts from its NQ-open FiD reader (App. A; train_verification.sh:30,45 --checkpoint): train "
                "that first (`cq train fid` on NQ-open records) and pass its directory as --model",
                setting="base model", applies=COMMAND, stays=FLAG),
        Setting("train verifier", "passages", 100, "scripts/round_trip/lm_verification.sh:29 @159090e: "
                "TOP_K_PASSAGES=100 (train_verification.sh:32,50 takes PSG as an argument)",
                "the passages are the records' own (cq retrieve/rerank), not REFUEL's reranker's (its trained "
                "BERT reranker is not available offline)",
                setting="passages per question", applies=COMMAND, stays=MACHINE),
        Setting("train verifier", "max_passage_input_tokens", 160, "QAData.py:712-717 @159090e: question (32 tokens) "
                "+ passage (128)", setting="tokens per question + passage", applies=COMMAND),
        Setting("train verifier", "batch_size", 64, "App. A 'LM Verification'; train_verification.sh:53 @159090e: "
                "--train_batch_size=64", "with fewer GPUs keep the product of --batch-size, --grad-accum and "
                "processes at 64", setting="batch (per process)", applies=COMMAND, stays=FLAG),
        Setting("train verifier", "lr", 3e-5, "App. A 'LM Verification': learning rate 3e-5",
                "the paper's; the released script trains with 1e-5 (train_verification.sh:55 @159090e): --lr 1e-5 "
                "for it", setting="learning rate", applies=COMMAND, stays=FLAG),
        *SCHEDULE("train verifier", "scripts/round_trip/train_verification.sh:56-57"),
        Setting("train verifier", "eval_every", 10, "scripts/round_trip/train_verification.sh:63 @159090e: "
                "--eval_period=10, counted in optimiser steps (one batch of 64 a step, run.py:584-652); "
                "--wait_step=1000000 (line 61): no early stop", setting="dev evaluation steps", applies=COMMAND),
        Setting("train verifier", "epochs", 30, "App. A 'LM Verification': epoch 30, the best model on dev EM",
                "the paper's; the released script trains 10 epochs (train_verification.sh:60 @159090e): --epochs 10 "
                "for it; cq keeps the best dev EM with --dev (else the last weights)", setting="epochs",
                applies=COMMAND, stays=FLAG),
        Setting("train verifier", "max_answer_tokens", 20, "train_verification.sh:46 @159090e: "
                "--max_answer_length=20 (targets cut there, and dev EM's decoding)", setting="answer tokens",
                applies=COMMAND),
    ),
    departures=(
        "cq train fid: targets are every combination of found aliases in the gold order; REFUEL adds up to 500 "
        "orders of each (QAData.py:789-805 @159090e) and cuts them at 48 tokens as cq does.",
    ),
)

PRESETS = (REFUEL,)
