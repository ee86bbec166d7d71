"""AmbigQA (Min et al., EMNLP 2020): SpanSeqGen multiple answers, then question disambiguation,
and the DISAMBIG-FIRST baseline, as the paper and the released code (shmsw25/AmbigQA @5c8cdb1) run them."""
from __future__ import annotations

from .base import COMMAND, LAYOUT, Preset, Setting  # noqa: F401

CODE = "shmsw25/AmbigQA @5c8cdb1"
PAPER = "../shared/papers/ambigqa.txt (Min, Michael, Hajishirzi, Zettlemoyer, EMNLP 2020)"

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
                "reader (whose options differ)", setting="reader", applies=COMMAND),
        Setting("answer", "mode", "multi", "§5 (SpanSeqGen): the distinct answers, separated by [SEP]",
                "an LM prompted for a list instead of BART fine-tuned on NQ-open, then AmbigNQ",
                setting="answer mode"),
        Setting("answer", "max_passage_tokens", 1024, "§5: the question and the top passages in order up to 1,024 "
                "tokens; codes/QAData.py:212-227 @5c8cdb1",
                "counted with the reader's tokenizer, not BART's; the release cuts the last passage at token 1,024, cq "
                "stops before the first passage that does not fit (cqtools/stages/evidence.py)",
                setting="evidence budget (tokens)", applies=LAYOUT),
        Setting("answer", "passage_chars", 0, "codes/QAData.py:218-224 @5c8cdb1: passages are concatenated whole",
                setting="passage text shown", applies=LAYOUT),
        Setting("answer", "grounding", "none", "§5: SpanSeqGen, a BART seq2seq model, generates the answers "
                "(no span is extracted)", "cq's default snaps a generated answer to a passage span; here "
                "answers stay as generated", setting="answer grounding", applies=LAYOUT),
        Setting("answer", "num_beams", 4, "codes/run.py:279-283 @5c8cdb1: SpanSeqGen decodes with model.generate("
                "num_beams=4, early_stopping=True)", "cq stops a beam at the answer list's end as well; an API model "
                "searches no beams (the row is not applied to one: meta.preset_rows says so)",
                setting="beam search"),

        # --- disambiguate ---
        Setting("disambiguate", "method", "qd", "§5 Question Disambiguation; codes/QGData.py:244-401 @5c8cdb1",
                "an instruction-following causal LM prompted with cq's own wording and 3 shots instead of BART "
                "pretrained on NQ-OPEN and finetuned on AmbigNQ (train that with `cq train qd --preset ambigqa` and "
                "pass it as --model: it reads the release's input, no prompt)", setting="disambiguation method"),
        Setting("disambiguate", "layout", "ambigqa", "codes/QGData.py:358-366 @5c8cdb1: target answer <SEP> "
                "question <SEP> each other answer, then the passages",
                "labels (Answer:/Question:/Other answers:/Passage:) and the closing request are cq's; the paper's "
                "§5 lists the question before the answer", setting="prompt order"),
        Setting("disambiguate", "max_others", 0, "codes/QGData.py:362-365 @5c8cdb1: every other answer",
                setting="other answers shown (0: all)"),
        Setting("disambiguate", "passage_order", "reranked", "§5 (the top passages as SpanSeqGen reads them); "
                "codes/QGData.py:316-322 @5c8cdb1",
                "at this commit the released loop never advances its passage offset and repeats the first passage "
                "up to 1,024 tokens (fixtures/released/ambigqa_qd); cq reads them in reranked order, as the "
                "paper and QGData.py:95-101 do", setting="passage order"),
        Setting("disambiguate", "max_passage_tokens", 1024, "§5 (SpanSeqGen: passages in order up to 1024 "
                "tokens); codes/QGData.py:237 @5c8cdb1 (the input cut at 1,024)",
                "counted with the LM's tokenizer (4 characters a token for an API model), not BART's; the "
                "instruction and shots are not counted", setting="evidence budget (tokens)"),
        Setting("disambiguate", "n_passages", 100, "§5: 100 retrieved passages, reranked; codes/QGData.py:276-280 "
                "@5c8cdb1 (DPR's passages, the reader's selection)",
                "the pool is what the record carries: keep it (`cq rerank` without --top 5)",
                setting="passages considered"),
        Setting("disambiguate", "passage_words", 100, "codes/PassageData.py:60-63 @5c8cdb1: title </s> text, at "
                "most 128 BART tokens (Wikipedia split into 100-word passages)", setting="words per passage"),
        Setting("disambiguate", "num_beams", 4, "codes/run.py:279-283 @5c8cdb1: the QD model decodes with the same "
                "model.generate(num_beams=4, early_stopping=True)", "cq stops a beam at a newline as well; an API "
                "model searches no beams (the row is not applied to one: meta.preset_rows says so)",
                setting="beam search"),
        Setting("disambiguate", "duplicates", "keep", "codes/QGData.py:420-460 @5c8cdb1: predictions are scored "
                "as generated", setting="an echoed or repeated DQ"),

        # --- gen-cq ---

        # --- score ---

        # --- train spanseqgen (the reader's recipe) ---
        Setting("train spanseqgen", "model", "facebook/bart-large", "§5 and codes/README.md:195 @5c8cdb1: "
                "--bert_name bart-large", "initialised from BART-large itself: the release starts from its "
                "SpanSeqGen trained on NQ-open (codes/README.md:158, 'initialize weights from models trained on "
                "NQ-open'); train that first with cq on NQ-open records and pass its directory as --model",
                setting="base model", applies=COMMAND),
        Setting("train spanseqgen", "input_layout", "ambigqa", "codes/QAData.py:129-141, 592-596 and "
                "codes/PassageData.py:60-63 @5c8cdb1: \"<s> question?\" then each passage \"title </s> text\" "
                "(128 tokens), lower-cased", "the passages are the records' own (cq retrieve/rerank), not DPR's "
                "reader-selected ones (--psg_sel_dir); an answer counts as found when its text is in the decoded "
                "input, not as a token subsequence", setting="input layout", applies=COMMAND),
        Setting("train spanseqgen", "max_input_tokens", 1024, "codes/QAData.py:592, 655 @5c8cdb1: passages "
                "appended until 1,024 tokens, cut there", setting="input tokens", applies=COMMAND),
        Setting("train spanseqgen", "batch_size", 24, "codes/README.md:205 @5c8cdb1: train_batch_size=24 for "
                "BART on AmbigQA (over four 32GB GPUs)", "the README's command line says 20 (codes/README.md:197); "
                "with fewer GPUs keep the product of --batch-size, --grad-accum and processes at 24",
                setting="batch (per process)", applies=COMMAND),
        Setting("train spanseqgen", "lr", 5e-6, "codes/README.md:205 @5c8cdb1: learning_rate=5e-6 on AmbigQA",
                "cq's loop warms up over a tenth of the steps and decays linearly to 0 (the release: no warm-up, "
                "decay over 100,000 steps, run.py:99-101, cli.py:117); weight decay 0.01 on every weight (the "
                "release: 0, cli.py:107)",
                setting="learning rate", applies=COMMAND),
        Setting("train spanseqgen", "epochs", 15, "Appendix, Model implementation: 15 epochs on AmbigNQ, the best "
                "checkpoint on dev", "with --dev cq keeps the best dev F1_ans (see below)", setting="epochs",
                applies=COMMAND),
        Setting("train spanseqgen", "eval_every", 500, "codes/README.md:198 @5c8cdb1: --eval_period 500; "
                "codes/run.py:166-174 keeps best-model.pt, the best dev F1 (QAData.py:491)", "the release also stops "
                "after 10 evaluations without a gain (--wait_step 10); cq trains the whole --epochs / --max-steps",
                setting="dev evaluation steps", applies=COMMAND),
        Setting("train spanseqgen", "num_beams", 4, "codes/run.py:279-283 @5c8cdb1: model.generate(num_beams=4, "
                "early_stopping=True)", setting="beam search (dev, cq answer)", applies=COMMAND),
        Setting("train spanseqgen", "max_answer_tokens", 25, "codes/README.md:198 @5c8cdb1: --max_answer_length 25 "
                "(generate's max_length)", "cq counts generated tokens (max_new_tokens), the release the whole "
                "output with its start tokens", setting="answer tokens", applies=COMMAND),
        # --- train qd (the question-disambiguation model's recipe) ---
        Setting("train qd", "model", "facebook/bart-large", "§5 and Appendix, Model implementation: BART-large",
                "initialised from BART-large itself: the paper's QD model is pretrained on NQ-open (§5), with "
                "nothing of that step released; pass such a model as --model", setting="base model", applies=COMMAND),
        Setting("train qd", "max_input_tokens", 1024, "codes/QGData.py:354-371 and 237 @5c8cdb1: answer <SEP> "
                "question <SEP> other answers, then passages, cut at 1,024 tokens",
                "at this commit the loop never advances its passage offset and repeats the first passage "
                "(QGData.py:316-322); cq appends the passages in order, as SpanSeqGen's input does",
                setting="input tokens", applies=COMMAND),
        Setting("train qd", "epochs", 15, "Appendix, Model implementation: 15 epochs on AmbigNQ, the best "
                "checkpoint on dev", "with --dev cq keeps the best dev EDIT-F1 given the gold answers (words split "
                "simply; `cq score --task ambigqa` tokenizes as the paper does)", setting="epochs", applies=COMMAND),
        Setting("train qd", "eval_every", 500, "codes/README.md:198 @5c8cdb1: --eval_period 500; codes/run.py:166-174 "
                "keeps the best on the dev metric, EDIT-F1 for QD (QGData.py:211)", "stated for SpanSeqGen (QD's "
                "command line is not released); no early stop (--wait_step 10 in the release)",
                setting="dev evaluation steps", applies=COMMAND),
        Setting("train qd", "lr", 5e-6, "Appendix, Model implementation: learning rate 5e-6 on both tasks",
                "cq's linear schedule warms up over a tenth of the steps (fairseq's summarization defaults "
                "otherwise)", setting="learning rate", applies=COMMAND),
        Setting("train qd", "batch_size", 24, "codes/README.md:205 @5c8cdb1: train_batch_size=24 for BART on "
                "AmbigQA", "stated for SpanSeqGen; the QD model's batch is not given (QD's code is 'coming soon', "
                "README.md:289-290)", setting="batch (per process)", applies=COMMAND),
        Setting("train qd", "num_beams", 4, "codes/run.py:279-283 @5c8cdb1: the same model.generate(num_beams=4)",
                setting="beam search (cq disambiguate)", applies=COMMAND),
        Setting("train qd", "max_question_tokens", 32, "codes/cli.py:73 and QGData.py:388 @5c8cdb1: "
                "--max_question_length 32 (targets and decoding)", setting="DQ tokens", applies=COMMAND),
    ),
    departures=(
        "cq train spanseqgen and qd: the paper keeps the best checkpoint on dev (Appendix); the release evaluates dev "
        "F1 every 500 steps and stops after 10 evaluations without a gain (codes/cli.py:115-119, codes/run.py:154-187 "
        "@5c8cdb1); cq trains for --epochs / --max-steps, scores dev every --eval-every steps (500 with this preset) "
        "and keeps the best weights (F1_ans, EDIT-F1), without stopping early; without --dev it keeps the last.",
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
                "without --model, the one trained here ($CQ_MODELS/detect) or else the one cq ships (question only)",
                setting="ambiguity detection"),
        Setting("detect", "n_passages", 0, "§5: the baseline disambiguates \"without any context from plausible "
                "answers or reference passages\"", setting="passages read (question only)"),

        # --- answer ---
        Setting("answer", "mode", "dqs", "§6.1 DISAMBIG-FIRST, step (3): each DQ is answered by a state-of-the-art "
                "NQ-open model (Karpukhin et al. 2020): retrieval, then a reader",
                "cq's reader (the installed extractive one, or --reader/--model) reads the DQ's passages reranked "
                "by the cross-encoder; DPR's reader selects among them itself", setting="answer mode"),
        Setting("answer", "retriever", "dense", "§5, §6.1: DPR's dense retriever",
                "cq's dense searcher over the user's index (cq index --dense; its encoder, not DPR's NQ model)",
                setting="retrieval per DQ"),
        Setting("answer", "hits", 100, "§5: 100 passages retrieved per question", setting="passages retrieved per DQ"),
        Setting("answer", "rerank_depth", 100, "§5: the reader considers the 100 retrieved passages",
                "the cross-encoder orders all 100 for the DQ; DPR's reader scores all 100 itself",
                setting="passages reranked per DQ"),
        Setting("answer", "max_passage_tokens", 0, "§5, §6.1: DPR's reader reads the DQ's retrieved set (its 100 "
                "passages, each in an input of its own), not a top 3", "the extractive reader reads each of the "
                "reranked 100 in an input of its own, as DPR's (0: the model's input length, which holds any one "
                "passage); a reader that reads one input (--reader generative) holds as many as fit its context. "
                "meta.passages_read.answer counts them per DQ", setting="passages read per DQ", applies=LAYOUT),
        Setting("answer", "span_order", "rank", "§5 (Karpukhin et al. 2020 predicts 'an answer span from the top 1 "
                "passage'): DPR's reader ranks the passages by its own selection score, then reads the best span "
                "of the first", "the shipped span reader has no selection head (`cq train reader --selection-head` "
                "trains one, and --span-order select then answers from the passage it selects), and its span "
                "scores do not compare across passages: the best span over all of them (span_order score) lost F1_ans -10.9 [-22.6, 2.1] and "
                "F1_ans_multi -12.7 [-23.0, -3.2] against this on 30 held-out covered AmbigNQ dev questions' gold "
                "DQs (BM25 10, docs/benchmarks/disambig-first.md). So the cross-encoder, which scores all of the "
                "DQ's passages, stands in for the selection head: the best span of the passage it ranks first",
                setting="which passage answers", applies=LAYOUT),

        # --- disambiguate ---
        Setting("disambiguate", "method", "disambig-first", "§5 DISAMBIG-FIRST step (2): an ambiguous question "
                "becomes DQs x1..xn separated by [SEP]; otherwise x1 = q",
                "a few-shot causal LM with cq's own wording (one reading per line) instead of a fine-tuned BART; "
                "no code was released for this baseline", setting="disambiguation method"),

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
