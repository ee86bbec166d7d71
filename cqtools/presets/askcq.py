"""AskCQ / CAmbigNQ (Lee et al., EMNLP 2023): ambiguity detection with passages, CQ generation from the
question, the answers (Pred-Answers / Gold-Answers) and the passages, and clarification-based QA, as the
paper and the released code (DongryeolLee96/AskCQ @d8be017) run them."""
from __future__ import annotations

from .base import COMMAND, FLAG, LAYOUT, MACHINE, Preset, Setting  # noqa: F401

CODE = "DongryeolLee96/AskCQ @d8be017"
PAPER = "../shared/papers/askcq-cambignq.txt (Lee, Kim, Kwiatkowski, Hwang, EMNLP 2023)"

ASKCQ = Preset(
    name='askcq',
    help="AskCQ: a classifier reading the question with its passages, CQs from the question, answers and passages (beam 4, 32 tokens) in the 'A, or B' form, each option answered over its reranked passages up to 1,024 tokens",
    paper=PAPER,
    code=CODE,
    settings=(
        # --- retrieve / rerank ---

        # --- detect ---
        Setting("detect", "method", "classifier", "§6.1 Task 1 (No Answers: BERT-base-cased with a linear head over "
                "\"question [SEP] relevant_passages\"); ambiguity_detection/run_ambiguity_detection.py @d8be017",
                "cq's classifier is what `cq train detect` fine-tunes (MiniLM by default; --model bert-base-cased "
                "for the paper's); pass its directory with --model (without one: $CQ_MODELS/detect, else the shipped "
                "classifier, trained on the question alone: its card says so, and cq detect refuses to feed it passages). Train it as AskCQ did with --passages 100 "
                "--max-length 512 over retrieved training records (make train-detect DETECT_PASSAGES=100 "
                "DETECT_MAX_LENGTH=512); cq detect reuses the model's max length. Measured here: a MiniLM trained so "
                "(5 passages, 256 tokens, 202 CPU steps) did worse than the question-only one on held-out questions, "
                "the shared corpus holding passages for dev questions only (docs/benchmarks/detect_askcq.md)",
                setting="ambiguity detection", stays=FLAG),
        Setting("detect", "n_passages", 100, "run_ambiguity_detection.py:441-444 @d8be017: the question and every "
                "relevant passage joined by [SEP], cut at max_seq_length 1024 (run_ambiguity_detection.sh), which "
                "becomes BERT's 512 (line 433); README: the top-100 retrieved passages",
                "cq detect encodes them as the classifier was trained (its cq_train.json input_layout): one joined "
                "sequence cut at its end, as the release, for one `cq train detect --preset askcq` trained; (question, "
                "passages) as a pair, passages cut first, for any other: give the joined one as --model DIR; each "
                "passage is cut to 256 words and written \"title: text\" (the release's text is in its unreleased "
                "data files)",
                setting="passages read (cut at the model's max length)", stays=FLAG),

        # --- answer ---
        Setting("answer", "reader_name", "generative", "§6.3: a BART reader answers each revised question",
                "an LM reads instead of the fine-tuned BART (train that with `cq train spanseqgen --preset askcq` "
                "and read with `--reader seqgen --model DIR`); set even where `make models` installed an extractive "
                "reader (whose options differ)", setting="reader", applies=COMMAND, stays=FLAG),
        Setting("answer", "mode", "cq", "§5.3 (CBQA): one answer per option of the CQ, for the AQ revised by the CQ "
                "(in the release's form: the revised_question row)", setting="answer mode"),
        Setting("answer", "revised_question", "askcq", "CQDataset.py:251 @d8be017 (process_data_for_inference): the revised "
                "question is the question, the CQ's category as parse_clarification_question reads it, the option and "
                "'?', joined by spaces", setting="revised question"),
        Setting("answer", "rerank_depth", 100, "CQDataset.py:251-264 @d8be017: each revised question reranks all "
                "100 retrieved passages with cross-encoder/ms-marco-MiniLM-L-12-v2 (CQDataset.py:9); keep 100 "
                "passages on the record (cq retrieve --hits 100, no cq rerank "
                "--top)", setting="passages reranked per option"),
        Setting("answer", "max_passage_tokens", 1024, "CQDataset.py:265-272 and run_cambigqa_inference.sh "
                "(max_token_nums=1024) @d8be017: the revised question, then passages in reranked order, cut at "
                "1,024 BART tokens",
                "counted with the reader's tokenizer: the reader is cq's, not BART fine-tuned on CAmbigNQ (not "
                "offline; `cq train spanseqgen --preset askcq` trains one, read with --reader seqgen --model DIR)",
                setting="evidence budget (tokens)", applies=LAYOUT, stays=MACHINE),
        Setting("answer", "passage_cut", "last", "CQDataset.py:265-272 @d8be017: the reranked passages joined, then "
                "the input cut at 1,024 tokens: the last passage read in part", setting="the passage over the budget",
                applies=LAYOUT),
        Setting("answer", "passage_chars", 0, "CQDataset.py:266-268 @d8be017: passages are concatenated whole",
                setting="passage text shown", applies=LAYOUT),
        Setting("answer", "grounding", "none", "§6.3: an NQ-pretrained BART-large reader generates the "
                "answer for each option's revised question (its target label is the option's answer): answers stay as "
                "generated, where cq's default snaps one to a passage span (under this preset it replaced every "
                "option's answer)", setting="answer grounding", applies=LAYOUT),
        Setting("answer", "num_beams", 4, "run.py:262-266 @d8be017: the release's one seq2seq inference "
                "(model.generate(num_beams=4, early_stopping=True)) decodes the cqa task's answers too",
                "the local LM reader (no BART fine-tuned on CAmbigNQ offline) has no EOS after the answer, so cq "
                "stops a beam at its end as well; an API model searches no beams (the row is not applied to one: "
                "meta.preset_rows says so)", setting="beam search", stays=MACHINE),

        # --- disambiguate ---

        # --- gen-cq ---
        Setting("gen-cq", "method", "seq2seq", "§6.2: a fine-tuned BART-large generates the CQ; run.py:69 "
                "(CQGDataset) @d8be017", "any `cq train gen-cq` model (--model DIR); BART-large trained for "
                "18/41 epochs in the paper", setting="clarifying question", stays=FLAG),
        Setting("gen-cq", "with_answers", "pred", "§6.2, Table 4 'Predicted Answers for AQ': the answers "
                "SpanSeqGen predicted; CQDataset.py:108-110 @d8be017 (MA_type with_predicted_answers)",
                "--with-answers gold: the Ground-Truth-Answers upper bound (MA_type with_groundtruth_answers); drop "
                "it for 'No Answers'", setting="answers in the input", applies=LAYOUT, stays=FLAG),
        Setting("gen-cq", "input_layout", "askcq", "CQDataset.py:97-121 @d8be017: the question, each answer "
                "closed by the tokenizer's separator, then each passage encoded alone (<s>P</s>)",
                "how a passage's title joins its text is in the unreleased .pkl files; cq writes 'title: text'. "
                "Train a generator on this layout with `cq train gen-cq --input-layout askcq --two-options comma "
                "--with-answers gold` (a tokenizer with sep, bos and eos tokens, e.g. BART's), with gold answers in "
                "the input as the release trained the generator its predicted-answers runs read "
                "(run_cambigqa_inference.sh:36-48 @d8be017: one model, 19904, for gold and predicted answers): it trains on the input cq gen-cq generates "
                "from (up to 100 passages within 1,024 tokens, the last cut there) with the release's lr 1e-5, batch 10 with "
                "gradients summed over 2, the best dev CQ BLEU kept every 250 steps (its 500 batches) and a stop after "
                "10 evaluations without gain (run_cq_training.sh:17-20; run.py:216-229), no warm-up or weight decay "
                "and a decay over 100,000 steps (run.py:138-146), the batches in file order (run.py:84) and dev CQs "
                "decoded with beam 4 (run.py:262-266), not its 100 epochs (--epochs); cq gen-cq then reads the layout "
                "from it",
                setting="input layout", applies=LAYOUT, stays=MACHINE),
        Setting("gen-cq", "max_passage_tokens", 1024, "CQDataset.py:126 @d8be017 and cli.py:47 "
                "(max_token_nums 1024): passages until BART's 1,024 input tokens are full",
                setting="passage budget (tokens)", applies=LAYOUT),
        Setting("gen-cq", "passage_cut", "last", "CQDataset.py:119-126 @d8be017: each passage appended, the input "
                "then cut at max_token_nums (1,024): the last passage read in part (cq: its longest leading text "
                "that fits, counted with the generator's tokenizer; `cq train gen-cq --input-layout askcq` trains on "
                "the same cut)", setting="the passage over the budget", applies=LAYOUT),
        Setting("gen-cq", "n_passages", 100, "CQDataset.py:119-121 @d8be017 reads every relevant passage of "
                "the record (the budget stops it first); a cap only: the budget decides how many are read",
                setting="passages at most", applies=LAYOUT),
        Setting("gen-cq", "primer", False, "CQDataset.py:97-121 @d8be017: the generator's input is the question, the "
                "answers and the passages; no word of the CQ is given to continue (seq2seq has no primer; an LM's "
                "few-shot prompt otherwise ends with the CQ's first word, "
                "'Which')", setting="CQ's first word given", applies=LAYOUT),
        Setting("gen-cq", "num_beams", 4, "run.py:262-266 @d8be017: model.generate(num_beams=4, "
                "early_stopping=True)", "a local LM (no BART fine-tuned on CAmbigNQ offline) has no EOS after the CQ, "
                "so cq stops a beam at a newline as well", setting="beam search", stays=MACHINE),
        Setting("gen-cq", "max_new_tokens", 32, "cli.py:74 @d8be017: --max_question_length 32 is generate's "
                "max_length (run.py:255,265)", "run_cq_inference.sh passes 128 (--max-new-tokens 127 gives it); BART's max_length also "
                "counts the decoder's start token", setting="tokens generated", stays=FLAG),
        Setting("gen-cq", "two_options", "comma", "§3.2 and Table 9: 'Which [category]: [option_1], ..., or "
                "[option_n]?' ('In terms of what: time, or the number of games?'); CQDataset.py:"
                "parse_clarification_question splits at ', or' and ',' only, so 'A or B' reads as one option "
                "(CAmbigNQ's editors also wrote 'A or B', Appendix C)",
                setting="two options written", applies=LAYOUT),

        # --- score ---

        # --- train detect (the passage classifier's recipe) ---
        Setting("train detect", "model", "bert-base-cased", "§6.1 Task 1: BERT-base-cased; "
                "ambiguity_detection/run_ambiguity_detection.sh:5 @d8be017", setting="base model", applies=COMMAND),
        Setting("train detect", "passages", 100, "README.md:74 @d8be017: the top-100 retrieved passages; "
                "run_ambiguity_detection.py:441-444: the question and every passage joined by [SEP]",
                "each passage is cut to 256 words and written \"title: text\" (the release's passage text is in "
                "its unreleased data files)", setting="passages in the input", applies=COMMAND, stays=MACHINE),
        Setting("train detect", "input_layout", "joined", "run_ambiguity_detection.py:441-444 @d8be017: "
                "tokenizer.sep_token.join([question] + passages), one sequence cut at its end (segment ids 0); cq "
                "detect reads the layout from the model's cq_train.json", setting="input layout", applies=COMMAND),
        Setting("train detect", "max_length", 512, "run_ambiguity_detection.sh:21 (--max_seq_length 1024) and "
                "run_ambiguity_detection.py:433 @d8be017 (cut to the tokenizer's 512)", setting="input tokens",
                applies=COMMAND),
        Setting("train detect", "batch_size", 8, "run_ambiguity_detection.sh:23 @d8be017: "
                "--per_device_train_batch_size 8", "the release trains in fp16 (line 19): add --mixed-precision fp16 "
                "(or bf16) on a GPU; a CPU refuses fp16", setting="batch (per process)", applies=COMMAND, stays=FLAG),
        Setting("train detect", "lr", 1e-5, "run_ambiguity_detection.sh:26 @d8be017: --learning_rate 1e-5",
                setting="learning rate", applies=COMMAND),
        Setting("train detect", "warmup_steps", 0, "run_ambiguity_detection.sh:10-37 @d8be017 sets no warm-up: "
                "transformers' TrainingArguments default warmup_steps 0, linear decay to 0 over the run's steps",
                setting="warm-up steps", applies=COMMAND),
        Setting("train detect", "weight_decay", 0.0, "run_ambiguity_detection.sh:10-37 @d8be017 sets none: "
                "TrainingArguments default weight_decay 0.0", setting="weight decay", applies=COMMAND),
        Setting("train detect", "epochs", 10, "run_ambiguity_detection.sh:27 @d8be017: --num_train_epochs 10",
                setting="epochs", applies=COMMAND),
        Setting("train detect", "eval_every", 500, "run_ambiguity_detection.sh:31-32 @d8be017: --evaluation_strategy "
                "steps --eval_steps 500 (optimiser steps; no gradient accumulation, line 24)",
                setting="evaluation steps", applies=COMMAND),
        Setting("train detect", "select", "loss", "run_ambiguity_detection.sh:35-36 @d8be017: "
                "--load_best_model_at_end --metric_for_best_model loss: the lowest dev loss",
                setting="checkpoint kept", applies=COMMAND),
        Setting("train detect", "patience", None, "run_ambiguity_detection.sh:10-37 @d8be017: no early-stopping "
                "callback, all 10 epochs run", setting="early stop (none)", applies=COMMAND),

        # --- train spanseqgen (the clarification-based QA reader's recipe) ---
        Setting("train spanseqgen", "input_layout", "askcq", "§6.1 Task 3; run_cambigqa_train.sh:15,24 @d8be017: "
                "TASK=cqa, dq_type=gold_cq; CQDataset.py:186-233: the question revised by each gold option (AQ + "
                "category + option + '?') then the passages reranked for it (CQDataset.py:201-213: the ms-marco "
                "cross-encoder over the record's passages, as cq answer reranks them at inference; cq train "
                "spanseqgen's --reranker), target that option's answer", setting="input layout", applies=COMMAND),
        Setting("train spanseqgen", "aliases", "draw", "CQDataset.py:231 @d8be017: one example per option, its "
                "answer's aliases tokenized together (answer_set_ids); lines 155-156: random.choice of one each time "
                "the example is drawn (cq: uniformly, by torch's seeded RNG, as cq train fid draws)",
                setting="answer aliases as targets", applies=COMMAND),
        Setting("train spanseqgen", "model", "facebook/bart-large", "run_cambigqa_train.sh:22-23 @d8be017: "
                "bert_name=facebook/bart-large, from AmbigQA's NQ-pretrained BART-large checkpoint",
                "train an NQ-open reader first (`cq train spanseqgen`) and pass its directory as --model",
                setting="base model", applies=COMMAND, stays=FLAG),
        Setting("train spanseqgen", "max_input_tokens", 1024, "run_cambigqa_train.sh:21 @d8be017: max_token_nums=1024",
                setting="input tokens", applies=COMMAND),
        Setting("train spanseqgen", "batch_size", 10, "run_cambigqa_train.sh:18 @d8be017: train_batch_size=10 "
                "(originally 20)", setting="batch (per process)", applies=COMMAND),
        Setting("train spanseqgen", "grad_accum", 2, "run_cambigqa_train.sh:17 @d8be017: "
                "gradient_accumulation_steps=2", setting="gradient accumulation", applies=COMMAND),
        Setting("train spanseqgen", "accumulate", "sum", "run.py:190-197 @d8be017: loss.backward() on each batch's "
                "loss as it is, the optimiser stepping every 2: the two batches' gradients summed",
                setting="accumulated gradients", applies=COMMAND),
        Setting("train spanseqgen", "lr", 1e-5, "cli.py:92 @d8be017: --learning_rate default 1e-5 (the script "
                "sets none)", setting="learning rate", applies=COMMAND),
        Setting("train spanseqgen", "warmup_steps", 0, "cli.py:106 @d8be017: --warmup_steps default 0 (run.py:144-145)",
                setting="warm-up steps", applies=COMMAND),
        Setting("train spanseqgen", "weight_decay", 0.0, "cli.py:96 @d8be017: --weight_decay default 0.0 "
                "(run.py:138-143)", setting="weight decay", applies=COMMAND),
        Setting("train spanseqgen", "decay_steps", 100000, "run.py:144-146 @d8be017: "
                "get_linear_schedule_with_warmup(..., num_training_steps=100000)", setting="decay horizon (steps)",
                applies=COMMAND),
        Setting("train spanseqgen", "shuffle", False, "run.py:84 @d8be017: DataLoader(train_dataset, ..., "
                "shuffle=False): every epoch in the file's order", setting="example order", applies=COMMAND),
        Setting("train spanseqgen", "epochs", 100, "run_cambigqa_train.sh:20 @d8be017: num_train_epochs=100",
                setting="epochs", applies=COMMAND),
        Setting("train spanseqgen", "eval_every", 250, "run_cambigqa_train.sh:19 @d8be017: eval_period=500, counted "
                "in batches (run.py:179-199: global_step grows each batch), gradients summed over 2 (line 17): 250 "
                "optimiser steps", "--grad-accum N changes what 500 batches are: give --eval-every 500/N",
                setting="dev evaluation steps", applies=COMMAND, stays=FLAG),
        Setting("train spanseqgen", "patience", 10, "run_cambigqa_train.sh:39 @d8be017: --wait_step 10; run.py:232-236",
                setting="early stop", applies=COMMAND),
        Setting("train spanseqgen", "num_beams", 4, "run.py:262-266 @d8be017: generate(num_beams=4)",
                setting="beam search (cq answer)", applies=COMMAND),
        Setting("train spanseqgen", "max_answer_tokens", 127, "run.py:256 and run_cambigqa_train.sh:16 @d8be017: "
                "generation max_length = max_question_length = 128 for task cqa, which counts the decoder start "
                "token: 127 generated", setting="answer tokens", applies=COMMAND),
    ),
    departures=(
        "gen-cq: AskCQ writes 'which one?' as the target of an unambiguous question and adds no answers "
        "to its input; cq writes no CQ for a record cq detect labelled unambiguous (gen-cq --all writes one "
        "from the same input).",
        "gen-cq: AskCQ fine-tuned BART-large on CAmbigNQ's gold CQs with gold answers in the input (run.py:69); "
        "no BART and no CAmbigNQ are available offline, so this preset's generator is one you train with "
        "`cq train gen-cq --input-layout askcq --two-options comma --with-answers gold` (the layout above; a "
        "tokenizer without sep, bos and eos tokens is refused in one line): its targets are a record's gold CQ "
        "where it has one (CAmbigNQ's, joined with cq convert --join), else a silver CQ built from the gold DQs.",
    ),
)

PRESETS = (ASKCQ,)
