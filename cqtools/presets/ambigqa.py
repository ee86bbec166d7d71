"""AmbigQA (Min et al., EMNLP 2020): SpanSeqGen multiple answers, then question disambiguation,
and the DISAMBIG-FIRST baseline, as the paper and the released code (shmsw25/AmbigQA @5c8cdb1) run them."""
from __future__ import annotations

from .base import COMMAND, FLAG, LAYOUT, MACHINE, Preset, Setting  # noqa: F401

CODE = "shmsw25/AmbigQA @5c8cdb1"
PAPER = "../shared/papers/ambigqa.txt (Min, Michael, Hajishirzi, Zettlemoyer, EMNLP 2020)"



def SCHEDULE(command: str) -> tuple:
    """The release's optimiser schedule for a trainer ``command``: AdamW without warm-up or weight decay, the learning
    rate decaying linearly over 100,000 steps whatever the run's length."""
    return (
        Setting(command, "warmup_steps", 0, "codes/cli.py:117 @5c8cdb1: --warmup_steps default 0 (run.py:99-100 "
                "passes it; --warmup_proportion is never read)", setting="warm-up steps", applies=COMMAND),
        Setting(command, "weight_decay", 0.0, "codes/cli.py:107 @5c8cdb1: --weight_decay default 0.0 (run.py:93-98)",
                setting="weight decay", applies=COMMAND),
        Setting(command, "decay_steps", 100000, "codes/run.py:99-101 @5c8cdb1: get_linear_schedule_with_warmup(..., "
                "num_training_steps=100000): 15 epochs end far above 0", setting="decay horizon (steps)",
                applies=COMMAND),
    )


AMBIGQA = Preset(
    name='ambigqa',
    help='AmbigQA: answers read from reranked passages up to 1,024 tokens, one DQ per answer conditioned on the question, that answer, the other answers and the passages in reranked order, both decoded with beam 4',
    paper=PAPER,
    code=CODE,
    settings=(
        # --- retrieve / rerank ---

        # --- detect ---

        # --- answer ---
        Setting("answer", "reader_name", "generative", "§5: SpanSeqGen generates the answers (BART)",
                "an LM reads instead of the fine-tuned BART (train that with `cq train spanseqgen --preset ambigqa` "
                "and read with `--reader seqgen --model DIR`); set even where `make models` installed an extractive "
                "reader (whose options differ)", setting="reader", applies=COMMAND, stays=FLAG),
        Setting("answer", "mode", "multi", "§5 (SpanSeqGen): the distinct answers, separated by [SEP]",
                "an LM prompted for a list instead of BART fine-tuned on NQ-open, then AmbigNQ: `--reader seqgen "
                "--model DIR` reads one `cq train spanseqgen --preset ambigqa` "
                "trained", setting="answer mode", stays=FLAG),
        Setting("answer", "max_passage_tokens", 1024, "§5: the question and the top passages in order up to 1,024 "
                "tokens; codes/QAData.py:212-227 @5c8cdb1",
                "counted with the reader's tokenizer, not BART's: the fine-tuned SpanSeqGen is not offline (`--reader "
                "seqgen --model DIR` reads one `cq train spanseqgen --preset ambigqa` trained, with BART's count)",
                setting="evidence budget (tokens)", applies=LAYOUT, stays=MACHINE),
        Setting("answer", "passage_cut", "last", "codes/QAData.py:218-227 @5c8cdb1: passages appended while the "
                "input is under 1,024 tokens, then the input cut at 1,024: the last passage read in part",
                setting="the passage over the budget", applies=LAYOUT),
        Setting("answer", "passage_chars", 0, "codes/QAData.py:218-224 @5c8cdb1: passages are concatenated whole",
                setting="passage text shown", applies=LAYOUT),
        Setting("answer", "grounding", "none", "§5: SpanSeqGen, a BART seq2seq model, generates the answers "
                "(no span is extracted): answers stay as generated, where cq's default snaps one to a passage span",
                setting="answer grounding", applies=LAYOUT),
        Setting("answer", "num_beams", 4, "codes/run.py:279-283 @5c8cdb1: SpanSeqGen decodes with model.generate("
                "num_beams=4, early_stopping=True)", "the local LM reader (no fine-tuned BART offline) has no EOS after "
                "the list, so cq stops a beam at the list's end as well; an API model searches no beams "
                "(the row is not applied to one: meta.preset_rows says so)", setting="beam search", stays=MACHINE),

        # --- disambiguate ---
        Setting("disambiguate", "method", "qd", "§5 Question Disambiguation; codes/QGData.py:244-401 @5c8cdb1",
                "an instruction-following causal LM prompted with cq's own wording and 3 shots instead of BART "
                "pretrained on NQ-OPEN and finetuned on AmbigNQ (train that with `cq train qd --preset ambigqa` and "
                "pass it as --model: it reads the release's input, no prompt)", setting="disambiguation method",
                stays=FLAG),
        Setting("disambiguate", "layout", "ambigqa", "codes/QGData.py:358-366 @5c8cdb1: target answer <SEP> "
                "question <SEP> each other answer, then the passages",
                "labels (Answer:/Question:/Other answers:/Passage:) and the closing request are cq's; the paper's "
                "§5 lists the question before the answer. --prompt FILE gives other words; a `cq train qd` model "
                "given as --model reads the release's input, no labels", setting="prompt order", stays=FLAG),
        Setting("disambiguate", "max_others", 0, "codes/QGData.py:362-365 @5c8cdb1: every other answer",
                setting="other answers shown (0: all)"),
        Setting("disambiguate", "passage_order", "reranked", "§5 (the top passages as SpanSeqGen reads them); "
                "codes/QGData.py:316-322 @5c8cdb1",
                "at this commit the released loop never advances its passage offset and repeats the first passage "
                "up to 1,024 tokens (QGData.py:316-322; fixtures/released/ambigqa_qd); cq reads them in reranked "
                "order, as the paper and QGData.py:95-101 do: --passage-order first-repeated gives the release's "
                "repeat", setting="passage order", stays=FLAG),
        Setting("disambiguate", "max_passage_tokens", 1024, "§5 (SpanSeqGen: passages in order up to 1024 "
                "tokens); codes/QGData.py:237 @5c8cdb1 (the input cut at 1,024)",
                "counted with the LM's tokenizer (4 characters a token for an API model), not BART's; the "
                "instruction and shots are not counted; a `cq train qd` model given as --model counts BART's, with no "
                "instruction", setting="evidence budget (tokens)", stays=FLAG),
        Setting("disambiguate", "n_passages", 100, "§5: 100 retrieved passages, reranked; codes/QGData.py:276-280 "
                "@5c8cdb1 (DPR's passages, the reader's selection); the pool is what the record carries: keep it "
                "(`cq rerank` without --top 5)", setting="passages considered"),
        Setting("disambiguate", "passage_words", 100, "codes/PassageData.py:60-63 @5c8cdb1: title </s> text, at "
                "most 128 BART tokens (Wikipedia split into 100-word passages)", setting="words per passage"),
        Setting("disambiguate", "num_beams", 4, "codes/run.py:279-283 @5c8cdb1: the QD model decodes with the same "
                "model.generate(num_beams=4, early_stopping=True)", "the local LM (no fine-tuned BART offline) has no "
                "EOS after the DQ, so cq stops a beam at a newline as well; an API model searches no beams "
                "(the row is not applied to one: meta.preset_rows says so)", setting="beam search", stays=MACHINE),
        Setting("disambiguate", "duplicates", "keep", "codes/QGData.py:420-460 @5c8cdb1: predictions are scored "
                "as generated", setting="an echoed or repeated DQ"),

        # --- gen-cq ---

        # --- score ---

        # --- train spanseqgen (the reader's recipe) ---
        Setting("train spanseqgen", "model", "facebook/bart-large", "§5 and codes/README.md:195 @5c8cdb1: "
                "--bert_name bart-large", "initialised from BART-large itself: the release starts from its "
                "SpanSeqGen trained on NQ-open (codes/README.md:158, 'initialize weights from models trained on "
                "NQ-open'); train that first with cq on NQ-open records and pass its directory as --model",
                setting="base model", applies=COMMAND, stays=FLAG),
        Setting("train spanseqgen", "input_layout", "ambigqa", "codes/QAData.py:129-141, 592-596 and "
                "codes/PassageData.py:60-63 @5c8cdb1: \"<s> question?\" then each passage \"title </s> text\" "
                "(128 tokens), lower-cased", "the passages are the records' own (cq retrieve/rerank), not DPR's "
                "reader-selected ones (--psg_sel_dir: the NQ-trained DPR reader is not available offline); an answer counts as found when its text is in the decoded "
                "input, not as a token subsequence", setting="input layout", applies=COMMAND, stays=MACHINE),
        Setting("train spanseqgen", "max_input_tokens", 1024, "codes/QAData.py:592, 655 @5c8cdb1: passages "
                "appended until 1,024 tokens, cut there", setting="input tokens", applies=COMMAND),
        Setting("train spanseqgen", "batch_size", 24, "codes/README.md:205 @5c8cdb1: train_batch_size=24 for "
                "BART on AmbigQA (over four 32GB GPUs)", "the README's command line says 20 (codes/README.md:197); "
                "with fewer GPUs keep the product of --batch-size, --grad-accum and processes at 24",
                setting="batch (per process)", applies=COMMAND, stays=FLAG),
        Setting("train spanseqgen", "lr", 5e-6, "codes/README.md:205 @5c8cdb1: learning_rate=5e-6 on AmbigQA",
                setting="learning rate", applies=COMMAND),
        *SCHEDULE("train spanseqgen"),
        Setting("train spanseqgen", "epochs", 15, "Appendix, Model implementation: 15 epochs on AmbigNQ, the best "
                "checkpoint on dev", setting="epochs",
                applies=COMMAND),
        Setting("train spanseqgen", "eval_every", 500, "codes/README.md:198 @5c8cdb1: --eval_period 500, counted in "
                "batches (run.py:129,154), one optimiser step each (gradient_accumulation_steps 1, cli.py:113); "
                "codes/run.py:166-174 keeps best-model.pt, the best dev F1 (QAData.py:491)",
                setting="dev evaluation steps", applies=COMMAND),
        Setting("train spanseqgen", "patience", 10, "codes/README.md:198 @5c8cdb1: --wait_step 10; run.py:180-186 "
                "stops after 10 evaluations without a better dev F1", setting="early stop", applies=COMMAND),
        Setting("train spanseqgen", "num_beams", 4, "codes/run.py:279-283 @5c8cdb1: model.generate(num_beams=4, "
                "early_stopping=True)", setting="beam search (dev, cq answer)", applies=COMMAND),
        Setting("train spanseqgen", "max_answer_tokens", 24, "codes/README.md:198 @5c8cdb1: --max_answer_length 25 "
                "(generate's max_length, which counts the decoder start token: 24 generated)", setting="answer tokens", applies=COMMAND),
        # --- train qd (the question-disambiguation model's recipe) ---
        Setting("train qd", "model", "facebook/bart-large", "§5 and Appendix, Model implementation: BART-large",
                "initialised from BART-large itself: the paper's QD model is pretrained on NQ-open (§5), with "
                "nothing of that step released; pass such a model as --model", setting="base model", applies=COMMAND, stays=FLAG),
        Setting("train qd", "max_input_tokens", 1024, "codes/QGData.py:354-371 and 237 @5c8cdb1: answer <SEP> "
                "question <SEP> other answers, then passages, cut at 1,024 tokens; QGData.py:324-372: the "
                "annotations missing the fewest answers in the passages, each answer's first alias found there (its "
                "tokens a run of the passages', lines 295-300)", setting="input tokens", applies=COMMAND),
        Setting("train qd", "passage_order", "reranked", "§5 (the top passages in order, as SpanSeqGen reads "
                "them); codes/QGData.py:95-101 @5c8cdb1 (the loop that advances its offset)",
                "the release's training input at 5c8cdb1 never advances its passage offset and repeats the first "
                "passage until 1,024 tokens (QGData.py:316-322, then cut at line 237); cq appends the passages in "
                "order, as the paper: --passage-order first-repeated trains on the release's repeat (saved with the "
                "model, which cq disambiguate then reads so)", setting="passage order", applies=COMMAND, stays=FLAG),
        Setting("train qd", "epochs", 15, "Appendix, Model implementation: 15 epochs on AmbigNQ, the best "
                "checkpoint on dev (cq: with --dev, the best dev EDIT-F1 of the DQs written for the annotation and "
                "aliases chosen as at training, QGData.py:379-383 @5c8cdb1)", setting="epochs", applies=COMMAND),
        Setting("train qd", "dev_tokenizer", "ptb", "codes/QGData.py:19, 210-213, 444-460 @5c8cdb1: dev EDIT-F1 over "
                "pycocoevalcap's PTBTokenizer, then normalize_answer (cq: the jar run by Java in a subprocess, as "
                "`cq score --task ambigqa`); each DQ's references its '|' variants (line 199)",
                setting="dev EDIT-F1 words", applies=COMMAND),
        Setting("train qd", "eval_every", 500, "codes/README.md:198 @5c8cdb1: --eval_period 500; codes/run.py:166-174 "
                "keeps the best on the dev metric, EDIT-F1 for QD (QGData.py:211)", "stated for SpanSeqGen (QD's "
                "command line is not released): --eval-every sets another", setting="dev evaluation steps",
                applies=COMMAND, stays=FLAG),
        Setting("train qd", "patience", 10, "codes/cli.py:119 @5c8cdb1: --wait_step default 10; run.py:180-186",
                "the QD command line is not released (README.md:289-290): --patience sets another",
                setting="early stop", applies=COMMAND, stays=FLAG),
        Setting("train qd", "lr", 5e-6, "Appendix, Model implementation: learning rate 5e-6 on both tasks",
                setting="learning rate", applies=COMMAND),
        *SCHEDULE("train qd"),
        Setting("train qd", "batch_size", 24, "codes/README.md:205 @5c8cdb1: train_batch_size=24 for BART on "
                "AmbigQA", "stated for SpanSeqGen; the QD model's batch is not given (QD's code is 'coming soon', "
                "README.md:289-290): --batch-size sets another", setting="batch (per process)", applies=COMMAND, stays=FLAG),
        Setting("train qd", "num_beams", 4, "codes/run.py:279-283 @5c8cdb1: the same model.generate(num_beams=4)",
                setting="beam search (cq disambiguate)", applies=COMMAND),
        Setting("train qd", "max_question_tokens", 32, "codes/cli.py:73 and QGData.py:388 @5c8cdb1: "
                "--max_question_length 32 (targets and decoding)", setting="DQ tokens", applies=COMMAND),
    ),
    departures=(
        "cq train spanseqgen and qd: as the release (codes/cli.py:115-119, codes/run.py:154-187 @5c8cdb1) cq scores "
        "dev every 500 steps, keeps the best weights (F1_ans, EDIT-F1) and stops after 10 evaluations without a gain; "
        "without --dev it keeps the last.",
    ),
)

DISAMBIG_FIRST = Preset(
    name='disambig-first',
    help="AmbigQA's DISAMBIG-FIRST baseline: the ambiguity classifier decides, DQs are written without passages, each DQ is answered by retrieval QA",
    paper=PAPER,
    code=CODE,
    settings=(
        # --- retrieve / rerank ---

        # --- detect ---
        Setting("detect", "method", "classifier", "§5 DISAMBIG-FIRST step (1): a BERT-based binary classifier",
                "cq's classifier is the encoder `cq train detect` fine-tunes (MiniLM by default, not BERT); "
                "without --model, the one trained here ($CQ_MODELS/detect) or else the one cq ships (question only); "
                "--model DIR reads a BERT one (`cq train detect --model bert-base-cased`)",
                setting="ambiguity detection", stays=FLAG),
        Setting("detect", "n_passages", 0, "§5: the baseline disambiguates \"without any context from plausible "
                "answers or reference passages\"", setting="passages read (question only)"),

        # --- answer ---
        Setting("answer", "mode", "dqs", "§6.1 DISAMBIG-FIRST, step (3): each DQ is answered by a state-of-the-art "
                "NQ-open model (Karpukhin et al. 2020): retrieval, then a reader",
                "cq's reader (the installed extractive one, or --reader/--model) reads the DQ's passages reranked "
                "by the cross-encoder and answers from its first (span_order below); DPR's reader selects among them "
                "itself, as --span-order select does with a reader that has a selection head (`cq train reader "
                "--selection-head`, given as --model DIR)", setting="answer mode", stays=FLAG),
        Setting("answer", "retriever", "dense", "§5, §6.1: DPR's dense retriever",
                "cq's dense searcher over the user's index (cq index --dense; its encoder, not DPR's NQ model, "
                "which is not offline)", setting="retrieval per DQ", stays=MACHINE),
        Setting("answer", "hits", 100, "§5: 100 passages retrieved per question", setting="passages retrieved per DQ"),
        Setting("answer", "rerank_depth", 100, "§5: the reader considers the 100 retrieved passages",
                "the cross-encoder orders all 100 for the DQ and its first answers; DPR's reader scores all 100 "
                "itself: --span-order select with a `cq train reader --selection-head` model (--model DIR) orders them "
                "by that head's score (the cross-encoder's order only breaks its ties)",
                setting="passages reranked per DQ", stays=FLAG),
        Setting("answer", "max_passage_tokens", 0, "§5, §6.1: DPR's reader reads the DQ's retrieved set (its 100 "
                "passages, each in an input of its own), not a top 3; cq's extractive reader reads each of the "
                "reranked 100 in an input of its own, as DPR's (0: the model's input length, which holds any one "
                "passage); a reader that reads one input (--reader generative) holds as many as fit its context. "
                "meta.passages_read.answer counts them per DQ", setting="passages read per DQ", applies=LAYOUT),
        Setting("answer", "span_order", "rank", "§5 (Karpukhin et al. 2020 predicts 'an answer span from the top 1 "
                "passage'): DPR's reader ranks the passages by its own selection score, then reads the best span "
                "of the first", "the shipped span reader has no selection head, so the preset keeps rank (select "
                "refuses a reader without one): `cq train reader --selection-head` trains one, and --span-order "
                "select with it as --model DIR answers from the passage it selects, as DPR's reader; the shipped "
                "reader's span "
                "scores do not compare across passages: the best span over all of them (span_order score) lost F1_ans -10.9 [-22.6, 2.1] and "
                "F1_ans_multi -12.7 [-23.0, -3.2] against this on 30 held-out covered AmbigNQ dev questions' gold "
                "DQs (BM25 10, docs/benchmarks/disambig-first.md). So the cross-encoder, which scores all of the "
                "DQ's passages, stands in for the selection head: the best span of the passage it ranks first",
                setting="which passage answers", applies=LAYOUT, stays=FLAG),

        # --- disambiguate ---
        Setting("disambiguate", "method", "disambig-first", "§5 DISAMBIG-FIRST step (2): an ambiguous question "
                "becomes DQs x1..xn separated by [SEP]; otherwise x1 = q",
                "a few-shot causal LM with cq's own wording (one reading per line) instead of a fine-tuned BART; "
                "no code or model was released for this baseline, and no such BART is offline",
                setting="disambiguation method", stays=MACHINE),

        # --- gen-cq ---

        # --- score ---

    ),
    departures=(
        "DISAMBIG-FIRST step (2): the paper's BART writes the DQs as one [SEP]-separated sequence; cq's LM writes "
        "one per line, and drops an echo of the question or a repeat; a generation with no usable DQ keeps the "
        "question (marked fallback: true).",
    ),
)

PRESETS = (AMBIGQA, DISAMBIG_FIRST,)
