# The papers' experiment grids as make targets (included by the Makefile).
# Every cell is a pipeline of cq commands, one file per stage, so cells share prefixes (retrieve
# once, rerank once, reuse everywhere). Each file F has beside it:
#   F.cmd      the full pipeline that made it, which `make compare` prints next to each number
#   F.wall     {"stage_s", "total_s", "attempts", "resumed", "jobs", "threads", "shared"}: wall seconds of
#              this stage, and from the question file through every stage F reads from (the index build
#              is not counted); make's -jN, OMP_NUM_THREADS, and whether any of those stages ran under -jN>1
#   F.cq.json  the run record of `cq --resume` (configuration, models, records read and written)
#   F.log      the full command of each attempt and everything it wrote on stderr (the terminal shows one short
#              line per cell and those lines shortened: bench/grid/cell.py)
# A stage writes F.part through `--resume F.part`, then renames it: a killed `make compare`
# continues each stage after the last record it wrote. A resumed stage's stage_s sums its attempts,
# each counted up to the last record it wrote (the batch in flight at the kill is lost, not counted).
#
#   make exp-askcq               AskCQ: detection, CQ generation, clarification-based QA
#                                (the shipped classifier and reader unless trained ones are installed; TRAIN=1)
#   make exp-ambigqa / exp-refuel / exp-clam / exp-toc
#   make exp-oracle              the simulated user's agreement with gold, per oracle, and its spread across them
#   make exp-field               a cell per other ambiguity benchmark reachable here (CLAMBER, CondAmbigQA)
#   make pairs                   paired bootstrap comparisons of the cells that answer the papers' questions
#   make compare                 all of the above, then docs/results.md
#
# Tiers of size: cells without a model (retrieval, detection always/never, the trained classifier,
# CQs from gold DQs) run on N_ALL covered AmbigNQ dev questions (empty: all of them); cells that call
# the LLM or the reranker on the first N_MODEL of the same questions (a prefix: pairs across tiers
# compare on the shared ids); ToC on the first N_ASQA covered ASQA dev questions, the released ToC
# loop (--preset toc, many more model calls) on the first N_TOC of those. N=K sets the first three to K
# (a smoke run: below). Other variables: DATA (the Makefile's: `make data` fills it), MODEL_LLM, MODEL_RERANK, MODEL_DETECT (a
# `cq train detect` dir), MODEL_READER (the extractive reader that answers: a `cq train reader` dir,
# by default the one `make models` installs; the cells marked .llm answer with MODEL_LLM instead, for
# the reader comparison), MODEL_DETECT_ASKCQ / MODEL_GENCQ_ASKCQ (AskCQ's trained classifier and CQ generator for
# the ambignq.cqa.preset cell), DEVICE (auto|cpu|cuda), HITS (retrieval depth), N_BOOT (bootstrap
# resamples), RESULTS (where `make compare` writes the report: docs/results.md; a smoke run, N=K:
# results.md in its EXP directory under WORK).

# N=K (a smoke run) also reads a BM25-only corpus index (seconds to build, where the dense one takes minutes on
# 2 cores) and leaves out the dense and hybrid retrieval cells; DISAMBIG-FIRST retrieves each DQ with BM25
# instead of its preset's dense searcher. DENSE=1 keeps the dense index and cells. The cells that read the
# deep reranked pool (RR_DEEP: the AmbigQA, AskCQ and REFUEL presets, which read up to 1,024 tokens of passages
# per prompt, and REFUEL's loop: a DQ per answer, each re-asked) and ToC's released loop run on one question
# there (N_DEEP=1, N_TOC=1): they check the wiring; on 5 questions they took most of the run. A smoke run also runs
# SMOKE_JOBS cells at a time (make -j, default 2), each on one thread: most of a 5-question cell is a process
# starting and loading its models, which is one thread's work; results do not depend on it (stages are
# batch- and order-invariant, the generation cache is safe to share), only the cells' seconds are marked as
# shared. SMOKE_JOBS=1 runs them one by one.
# A smoke run also serves its cells' cq commands from one process (SERVE=1, bench/grid/cell.py, cqtools/forkserver):
# it imports torch, transformers and cqtools once and runs each command in a forked child, with the records
# and stderr a process of its own writes; a 5-question cell otherwise spends most of its time importing them
# (docs/benchmarks/smoke.md). SERVE= runs every command in its own process.
ifdef N
# A smoke run's report goes beside its cells (under WORK, untracked), not over the tracked docs/results.md.
RESULTS      ?= $(EXP)/results.md
N_ALL        := $(N)
N_MODEL      := $(N)
N_ASQA       := $(N)
# `make paper-table N=K` runs every preset on K questions: its deep and ToC cells too
N_TOC        := $(if $(filter paper-table,$(MAKECMDGOALS)),$(N),1)
N_DEEP       := $(if $(filter paper-table,$(MAKECMDGOALS)),$(N),1)
DENSE        ?=
SMOKE_JOBS   ?= 2
SERVE        ?= $(if $(SLURM),,1)
ifneq ($(SMOKE_JOBS),1)
MAKEFLAGS    += -j$(SMOKE_JOBS)
export OMP_NUM_THREADS ?= 1
export CQ_ORT_THREADS ?= 1
endif
endif
DENSE        ?= 1
SERVE        ?=
ifneq ($(SERVE),)
export CQ_GRID_SERVE := 1
endif
N_ALL        ?=
N_MODEL      ?= 150
N_ASQA       ?= 100
N_TOC        ?= 10
N_DEEP       ?=
N_BOOT       ?= 1000
DEVICE       ?= auto
HITS         ?= 20
MODEL_LLM    ?= HuggingFaceTB/SmolLM2-135M-Instruct
MODEL_RERANK ?= cross-encoder/ms-marco-MiniLM-L-12-v2
# The grid on a served model (docs/cluster.md): MODEL_LLM=openai:NAME API_BASE=http://HOST:PORT/v1 sends every
# cell's language-model calls (every cell that reads MODEL_LLM: no local LLM is loaded) to that OpenAI-compatible
# server (vLLM, TGI, llama.cpp), API_CONCURRENCY requests in flight per cell (a key, if the server wants one,
# from CQ_API_KEY). Without API_BASE an openai: model goes to OPENAI_BASE_URL, else OpenAI's service.
API_BASE        ?=
API_CONCURRENCY ?= 8
ifneq ($(API_BASE),)
export OPENAI_BASE_URL := $(API_BASE)
export CQ_CONCURRENCY  := $(API_CONCURRENCY)
endif
# The classifier and the reader: the ones trained here ($(CQ_MODELS), `make models`) when there are, else the
# compact ones cq ships (cqtools/shipped/): a fresh clone's grid trains nothing. TRAIN=1 trains what is
# missing into $(CQ_MODELS) first, the CQ generator (ambignq.cq.finetuned, which has no shipped model) included;
# without it and without a generator in $(CQ_MODELS), that cell is left out.
TRAIN        ?=
SHIPPED_DIR  := cqtools/shipped
trained_or_shipped = $(if $(or $(TRAIN),$(wildcard $(CQ_MODELS)/$(1)/config.json)),$(CQ_MODELS)/$(1),$(SHIPPED_DIR)/$(1))
MODEL_DETECT ?= $(call trained_or_shipped,detect)
MODEL_READER ?= $(call trained_or_shipped,reader)
MODEL_GENCQ  ?= $(CQ_MODELS)/gencq
WITH_GENCQ   := $(if $(or $(TRAIN),$(wildcard $(MODEL_GENCQ)/config.json)),1)
DETECT_PASSAGES ?= 0
RESULTS      ?= docs/results.md
# Every tier that changes which questions a cell reads is in the name: a cell built for other tiers is never
# taken for this one (make compares times, not contents).
EXP          ?= $(WORK)/exp-all_$(or $(N_ALL),all)-model_$(N_MODEL)-asqa_$(N_ASQA)-toc_$(N_TOC)$(if $(N_DEEP),-deep_$(N_DEEP))
# The corpus index does not depend on the tiers: one for every EXP under WORK.
INDEX        ?= $(WORK)/exp-index$(if $(DENSE),,-bm25)
S            := $(EXP)/scores
P            := $(EXP)/pairs
LLM          := --model $(MODEL_LLM) --device $(DEVICE)
READER       := --model $(MODEL_READER) --device $(DEVICE)
RETRIEVERS   := bm25 $(if $(DENSE),dense hybrid)
# The model tier's questions (first N_MODEL), retrieved and reranked: the input of every model cell.
RR           := $(EXP)/ambignq.m.rr.jsonl
# Cells send many of the same prompts to the LLM (REFUEL's round trip starts with the plain reading,
# its verification reads the round trip's answers, ToC's tree expands its root with RAC's prompt):
# the grid shares one generation cache (CQ_GEN_CACHE, cqtools/models/gencache.py: byte-identical
# records; a cell run after another that made its generations reads them). GEN_CACHE= turns it off.
# Only the grid's stages and scores see it (benchmarks and tests never do); each writes how many
# generations it read (F.gencache), which F.wall records and results.md marks (§).
GEN_CACHE    ?= $(EXP)/generations.sqlite
GEN_ENV       = CQ_GEN_CACHE=$(if $(GEN_CACHE),$(abspath $(GEN_CACHE)) CQ_GEN_CACHE_REPORT=$@.gencache)$(if $(USAGE), CQ_USAGE=1)
# Every stage notes its LM calls, tokens and seconds per record (meta.usage, CQ_USAGE=1: docs/schema.md); the CLAM
# cells' scores report them per answered question (the results page's cost section). USAGE= leaves them out.
USAGE        ?= 1
# $(call after,CELLS,EARLIER): under make -jN, each of CELLS waits for EARLIER (whose generations it reads)
# rather than making the same generations beside it (order only: EARLIER being newer rebuilds nothing). Without
# the cache there is nothing to wait for. (asqa.dq.tree after asqa.dq.rac: 21 s instead of 85 s on 5 questions,
# docs/benchmarks/smoke.md.)
after = $(if $(GEN_CACHE),$(eval $(1): | $(2)))

# The grid on a SLURM cluster: SLURM=1 runs every stage, score and the corpus index build as its own job
# through `srun` (make stays on the login node; stdin and stdout pass through srun, so --resume, .cmd and .wall
# work as here, and a requeued or killed cell resumes as a killed local one does). make -jN keeps N cells
# queued at once. A stage that takes --device (a model stage) gets SLURM_GPU, any other SLURM_CPU; SLURM_OPTS
# go to every job (partition, account, --time). docs/cluster.md; tests/test_cluster.py runs a slice locally.
SLURM        ?=
SLURM_OPTS   ?=
SLURM_CPU    ?= --cpus-per-task=2
SLURM_GPU    ?= --cpus-per-task=8 --gres=gpu:1
slurm = $(if $(SLURM),srun --job-name=cq-$(notdir $@) --ntasks=1 $(SLURM_OPTS) $(if $(findstring --device,$(1)),$(SLURM_GPU),$(SLURM_CPU)) )

# What a run shows: each cell (every file made through $(call cell,COMMAND): stages, scores, paired comparisons,
# the index) prints one line, "cell k/N  3m10s elapsed, ~25m00s left  ambignq.det.llm.jsonl (cq detect)", and the
# lines its command writes on stderr, shortened, under its name; the full command and its whole stderr go to the
# cell's log file, F.log ($(INDEX).log for the index). bench/grid/cell.py runs it. N is counted by a dry run (make -n)
# of the goal when it is compare, exp-* or pairs (and not under make -n itself), whose lines (CQ_GRID_PLAN) give the
# time left by each kind of cell's measured cost (bench/grid/eta.py); other goals print "cell k" alone.
GRID := $(BIN)/python bench/grid/cell.py run
cell = $(GRID) $(if $(3),--input $(3) )$(or $(2),$@) -- '$(subst ','\'',$(strip $(1)))'
GRID_GOALS ?= $(filter compare exp-% pairs,$(MAKECMDGOALS))
ifeq ($(CQ_GRID_COUNTING)$(findstring n,$(firstword -$(MAKEFLAGS))),)
export CQ_GRID_START := $(shell date +%s.%N)
export CQ_GRID_LOG   := $(abspath $(EXP))/cells.log
ifneq ($(GRID_GOALS),)
export CQ_GRID_PLAN  := $(CQ_GRID_LOG).plan
export CQ_GRID_TOTAL := $(shell mkdir -p $(dir $(CQ_GRID_LOG)) && CQ_GRID_COUNTING=1 \
  MAKEFLAGS='-- $(subst ','\'',$(MAKEOVERRIDES))' $(MAKE) -n --no-print-directory $(GRID_GOALS) 2>/dev/null \
  | grep 'bench/grid/cell.py run ' > $(CQ_GRID_PLAN); wc -l < $(CQ_GRID_PLAN))
endif
endif

# $(call stage,COMMAND): one cq command, COMMAND --resume $@.part < first prerequisite, renamed to $@
# (its run record to $@.cq.json) when it ends; $@.cmd = the pipeline so far, $@.wall = wall seconds.
# A $@.part older than the input, or without its run record, is from another run: it is dropped.
define stage
	@mkdir -p $(dir $@)
	@if [ $@.part -ot $< ] || [ ! -e $@.part.cq.json ]; then rm -f $@.part $@.part.cq.json; fi
	@$(call cell,$(GEN_ENV) $(call slurm,$(1))$(1) --resume $@.part < $<,,$<) && mv $@.part $@ && mv $@.part.cq.json $@.cq.json && rm -f $@.part.attempts $@.part.cq.lock
	@{ cat $<.cmd 2>/dev/null || echo '# input: $<'; echo '  | $(subst $(CQ),cq,$(strip $(1)))'; } > $@.cmd
endef

# $(call first,N): the first N records of the first prerequisite (a tier of questions), with its .cmd and .wall.
define first
	@$(call cell,head -n $(1) $< > $@.part,,$<) && mv $@.part $@ && rm -f $@.part.attempts
	@{ cat $<.cmd; echo '  | head -n $(1)'; } > $@.cmd
endef

# Score options per task (the cells' scores and the paired comparisons use the same ones).
SCORE_detect    :=
SCORE_cq        := --no-bertscore
SCORE_cbqa      :=
SCORE_ambigqa   :=
SCORE_clam      :=
SCORE_asqa      := --reader $(MODEL_LLM) --device $(DEVICE)
SCORE_retrieval := --k 5,10,20
CI              := --ci --n-boot $(N_BOOT) --seed 0

# $(call score,TASK): score the first prerequisite into target (JSON with bootstrap intervals),
# target.cmd and target.wall (scoring counted in the cell's wall time), and its per-record scores into
# target.rows.jsonl.gz (what the reference bundle keeps beside each record).
define score
	@mkdir -p $(dir $@)
	@$(call cell,$(GEN_ENV) $(call slurm,$(SCORE_$(1)))$(CQ) score --task $(1) $(CI) $(SCORE_$(1)) --per-record $@.rows.jsonl.gz < $< > $@.part,,$<) && mv $@.part $@ && rm -f $@.part.attempts
	@{ cat $<.cmd 2>/dev/null; echo '  | cq score --task $(1) $(strip $(CI) $(SCORE_$(1)))'; } > $@.cmd
endef

# ---- shared prefixes ------------------------------------------------------------------------
# Its timing files sit beside the index directory ($(INDEX).wall): `cq index --overwrite` replaces
# only an index, never a directory holding other files.
$(INDEX)/cq_index.json: | $(STAMP)
	@$(call cell,$(call slurm,$(if $(DENSE),--device))$(CQ) index --corpus $(DATA)/corpus/passages.jsonl --out $(INDEX) $(if $(DENSE),--dense) --overwrite,$(INDEX),$(DATA)/corpus/passages.jsonl) && rm -f $(INDEX).part.attempts

# Questions the shared corpus was built for (its source_qid): selection of the evaluation set only.
COVERED_IDS = $(BIN)/python -c "import json,sys; [print(i) for i in sorted({json.loads(l)['source_qid'] for l in open(sys.argv[1])})]" \
  $(DATA)/corpus/passages.jsonl > $@
$(EXP)/covered.ids: | $(STAMP)
	@mkdir -p $(EXP)
	@$(call cell,$(COVERED_IDS))

CONVERT_AMBIGNQ := cq convert ambignq $(DATA)/ambignq/dev_light.json --ids $(EXP)/covered.ids $(if $(N_ALL),--limit $(N_ALL)) --silver-cq
$(EXP)/ambignq.jsonl: $(EXP)/covered.ids
	@$(call cell,$(BIN)/$(CONVERT_AMBIGNQ) -o $@.part,,$<) && mv $@.part $@ && rm -f $@.part.attempts
	@echo '$(CONVERT_AMBIGNQ)' > $@.cmd

# The model tier: the first N_MODEL of the same questions.
$(EXP)/ambignq.m.jsonl: $(EXP)/ambignq.jsonl
	$(call first,$(N_MODEL))

CONVERT_ASQA := cq convert asqa $(DATA)/asqa/dev.json --ids $(EXP)/covered.ids --limit $(N_ASQA)
$(EXP)/asqa.jsonl: $(EXP)/covered.ids
	@$(call cell,$(BIN)/$(CONVERT_ASQA) -o $@.part,,$<) && mv $@.part $@ && rm -f $@.part.attempts
	@echo '$(CONVERT_ASQA)' > $@.cmd

RETRIEVED := $(foreach q,ambignq asqa,$(foreach m,$(RETRIEVERS),$(EXP)/$(q).ret.$(m).jsonl)) $(EXP)/ambignq.m.ret.bm25.jsonl
$(filter $(EXP)/ambignq.ret.%,$(RETRIEVED)): $(EXP)/ambignq.ret.%.jsonl: $(EXP)/ambignq.jsonl $(INDEX)/cq_index.json
	$(call stage,$(CQ) retrieve --index $(INDEX) --method $* --hits $(HITS))
$(filter $(EXP)/asqa.ret.%,$(RETRIEVED)): $(EXP)/asqa.ret.%.jsonl: $(EXP)/asqa.jsonl $(INDEX)/cq_index.json
	$(call stage,$(CQ) retrieve --index $(INDEX) --method $* --hits $(HITS))
$(EXP)/ambignq.m.ret.bm25.jsonl: $(EXP)/ambignq.m.jsonl $(INDEX)/cq_index.json
	$(call stage,$(CQ) retrieve --index $(INDEX) --method bm25 --hits $(HITS))

RERANK := $(CQ) rerank --top 5 --model $(MODEL_RERANK) --device $(DEVICE)
$(RR): $(EXP)/ambignq.m.ret.bm25.jsonl
	$(call stage,$(RERANK))
# The preset cells read passages up to their papers' token budgets (1,024 tokens: about 8-10 passages), so
# they get a deeper pool: HITS_DEEP retrieved and all of them reranked. With the dense index (DENSE=1, the full
# grid) it is the papers' pool: the dense top 100, all reranked (AmbigQA §5, REFUEL: DPR's 100); a smoke run
# (BM25 only) retrieves 40 with BM25, which leave the budget full at a third of the reranking cost.
DEEP_METHOD := $(if $(DENSE),dense,bm25)
HITS_DEEP ?= $(if $(DENSE),100,40)
# N_DEEP (smoke runs: 1; set with the tiers above) cuts the cells that read this pool to its first N_DEEP
# questions (pairs compare on the shared ids); empty: the whole model tier.
RR_DEEP_ALL := $(EXP)/ambignq.m.rr.deep.jsonl
RR_DEEP := $(if $(N_DEEP),$(EXP)/ambignq.m.rr.deep.first$(N_DEEP).jsonl,$(RR_DEEP_ALL))
$(EXP)/ambignq.m.ret.$(DEEP_METHOD).deep.jsonl: $(EXP)/ambignq.m.jsonl $(INDEX)/cq_index.json
	$(call stage,$(CQ) retrieve --index $(INDEX) --method $(DEEP_METHOD) --hits $(HITS_DEEP))
$(RR_DEEP_ALL): $(EXP)/ambignq.m.ret.$(DEEP_METHOD).deep.jsonl
	$(call stage,$(CQ) rerank --top $(HITS_DEEP) --model $(MODEL_RERANK) --device $(DEVICE))
ifdef N_DEEP
$(RR_DEEP): $(RR_DEEP_ALL)
	$(call first,$(N_DEEP))
endif

$(S)/%.retrieval.json: $(EXP)/%.jsonl
	$(call score,retrieval)

# ---- AskCQ (Lee et al. 2023) -----------------------------------------------------------------
# Detection without a model (always, never) and the trained classifier: every question, retrieved
# passages (the classifier reads DETECT_PASSAGES of them: 0, as `make train-detect` trains it by default;
# AskCQ's No-Answers classifier: make train-detect DETECT_PASSAGES=100 DETECT_MAX_LENGTH=512, and the same
# DETECT_PASSAGES here).
DET_CHEAP := $(foreach m,always never classifier,$(EXP)/ambignq.det.$(m).jsonl)
$(EXP)/ambignq.det.always.jsonl $(EXP)/ambignq.det.never.jsonl: $(EXP)/ambignq.det.%.jsonl: $(EXP)/ambignq.ret.bm25.jsonl
	$(call stage,$(CQ) detect --method $*)
$(EXP)/ambignq.det.classifier.jsonl: $(EXP)/ambignq.ret.bm25.jsonl
	@test -d $(MODEL_DETECT) || { echo "no detector at $(MODEL_DETECT): pass MODEL_DETECT=DIR of a 'cq train detect' run"; exit 1; }
	$(call stage,$(CQ) detect --method classifier --model $(MODEL_DETECT) --passages $(DETECT_PASSAGES) --device $(DEVICE))
# The classifier needs a trained detector: with the default MODEL_DETECT, `make train-detect` runs first
# (once: the directory is the target); MODEL_DETECT=DIR uses a detector you trained elsewhere.
ifeq ($(MODEL_DETECT),$(CQ_MODELS)/detect)
$(EXP)/ambignq.det.classifier.jsonl: | $(MODEL_DETECT)
$(MODEL_DETECT):
	$(MAKE) train-detect DETECT_MODEL=$@
endif
# The extractive reader answers the AskCQ and CLAM cells: with the default MODEL_READER, `make
# train-reader` runs first (once: the directory is the target).
ifeq ($(MODEL_READER),$(CQ_MODELS)/reader)
$(MODEL_READER):
	$(MAKE) train-reader READER_MODEL=$@
endif
# Model tier: the LLM's few-shot detector, and distinct predicted answers (the LLM's: REFUEL's
# variants all read with it; the extractive reader's beside it, for the reader comparison).
$(EXP)/ambignq.multi.jsonl: $(RR)
	$(call stage,$(CQ) answer --mode multi $(LLM))
$(EXP)/ambignq.multi.extractive.jsonl: $(RR) | $(MODEL_READER)
	$(call stage,$(CQ) answer --mode multi $(READER))
$(EXP)/ambignq.det.llm.jsonl: $(RR)
	$(call stage,$(CQ) detect --method llm $(LLM))
$(EXP)/ambignq.det.answers.jsonl: $(EXP)/ambignq.multi.jsonl
	$(call stage,$(CQ) detect --method answers)
$(S)/ambignq.det.%.json: $(EXP)/ambignq.det.%.jsonl
	$(call score,detect)

# CQ generation settings: no answers (llm), CLAM zero-shot, gold DQs (from-dqs: upper bound, every
# question; ambignq.m.cq.fromdqs is the same on the model tier's reranked passages, for cqa.fromdqs).
$(EXP)/ambignq.cq.llm.jsonl: $(RR)
	$(call stage,$(CQ) gen-cq --method llm --all $(LLM))
$(EXP)/ambignq.cq.zeroshot.jsonl: $(RR)
	$(call stage,$(CQ) gen-cq --method llm --zero-shot --all $(LLM))
# AskCQ's fine-tuned generator (No-Answers input: the question; `make train-gen-cq`, trained on
# AmbigNQ train only).
ifeq ($(MODEL_GENCQ),$(CQ_MODELS)/gencq)
$(MODEL_GENCQ):
	$(MAKE) train-gen-cq GENCQ_MODEL=$@
endif
$(EXP)/ambignq.cq.finetuned.jsonl: $(RR) | $(MODEL_GENCQ)
	$(call stage,$(CQ) gen-cq --method seq2seq --model $(MODEL_GENCQ) --passages 0 --all --device $(DEVICE))
# AskCQ's inputs for the prompted generator: --preset askcq's input-layout rows (cqtools/presets/askcq.py), which
# any CQ method declaring them takes: Predicted Answers (the LLM's distinct answers; the Ground-Truth-Answers upper
# bound with --with-answers gold), passages up to 1,024 tokens, no "Which" primer, "A, or B". Its seq2seq decoding
# rows (beam 4, 32 tokens) are the fine-tuned BART's and stay with it.
$(EXP)/ambignq.cq.llm.pred.jsonl: $(EXP)/ambignq.multi.preset.jsonl
	$(call stage,$(CQ) gen-cq --preset askcq --method llm --all $(LLM))
$(EXP)/ambignq.cq.llm.gold.jsonl: $(RR_DEEP)
	$(call stage,$(CQ) gen-cq --preset askcq --method llm --with-answers gold --all $(LLM))
# cq's clarification path without a language model (the CPU default of cq gen-cq and cq chat): the CQ's options are
# the extractive reader's distinct supported answers or their passages' titles, by a template (pred-answers).
$(EXP)/ambignq.cq.grounded.jsonl: $(EXP)/ambignq.multi.extractive.jsonl
	$(call stage,$(CQ) gen-cq --method pred-answers --all)
$(EXP)/ambignq.cq.fromdqs.jsonl: $(EXP)/ambignq.ret.bm25.jsonl
	$(call stage,$(CQ) gen-cq --method from-dqs --all)
$(EXP)/ambignq.m.cq.fromdqs.jsonl: $(RR)
	$(call stage,$(CQ) gen-cq --method from-dqs --all)
$(S)/ambignq.cq.%.json: $(EXP)/ambignq.cq.%.jsonl
	$(call score,cq)

# Clarification-based QA: one answer per option of each CQ setting (model tier), by the extractive
# reader; cqa.fromdqs.llm is the LLM reader on the same CQs (the reader comparison).
CQA := $(CQ) answer --mode cq $(READER) --reranker $(MODEL_RERANK)
$(EXP)/ambignq.cqa.llm.jsonl $(EXP)/ambignq.cqa.zeroshot.jsonl $(EXP)/ambignq.cqa.grounded.jsonl: $(EXP)/ambignq.cqa.%.jsonl: $(EXP)/ambignq.cq.%.jsonl | $(MODEL_READER)
	$(call stage,$(CQA))
$(EXP)/ambignq.cqa.fromdqs.jsonl: $(EXP)/ambignq.m.cq.fromdqs.jsonl | $(MODEL_READER)
	$(call stage,$(CQA))
$(EXP)/ambignq.cqa.fromdqs.llm.jsonl: $(EXP)/ambignq.m.cq.fromdqs.jsonl
	$(call stage,$(CQ) answer --mode cq $(LLM) --reranker $(MODEL_RERANK))
# AskCQ's clarification-based QA as its preset runs it (answer --preset askcq: the LLM reads each option's passages,
# all reranked, up to 1,024 tokens) on the Predicted-Answers CQs. (gen-cq --preset askcq itself needs a seq2seq
# generator with BART's separators, which the offline models lack: cq.llm.pred gives its inputs to the LLM.)
# With AskCQ's trained models the cell runs README's pipeline: MODEL_DETECT_ASKCQ=DIR (`cq train detect --preset
# askcq`) labels the questions first, SpanSeqGen's reading (answer --preset ambigqa) gives the predicted answers and
# MODEL_GENCQ_ASKCQ=DIR (`cq train gen-cq --input-layout askcq --two-options comma --with-answers gold`) writes the
# CQs (for the ambiguous ones when the classifier ran, else for all); either one alone leaves the other step as above.
MODEL_DETECT_ASKCQ ?=
MODEL_GENCQ_ASKCQ  ?=
ASKCQ_TRAINED := $(or $(MODEL_DETECT_ASKCQ),$(MODEL_GENCQ_ASKCQ))
$(EXP)/ambignq.det.askcq.jsonl: $(RR_DEEP)
	$(call stage,$(CQ) detect --preset askcq --model $(MODEL_DETECT_ASKCQ) --device $(DEVICE))
$(EXP)/ambignq.multi.askcq.jsonl: $(EXP)/ambignq.det.askcq.jsonl
	$(call stage,$(CQ) answer --preset ambigqa $(LLM))
$(EXP)/ambignq.cq.askcq.jsonl: $(if $(MODEL_DETECT_ASKCQ),$(EXP)/ambignq.multi.askcq.jsonl,$(EXP)/ambignq.multi.preset.jsonl)
	$(call stage,$(CQ) gen-cq --preset askcq $(if $(MODEL_DETECT_ASKCQ),,--all) $(if $(MODEL_GENCQ_ASKCQ),--model \
	  $(MODEL_GENCQ_ASKCQ) --device $(DEVICE),--method llm $(LLM)))
$(EXP)/ambignq.cqa.preset.jsonl: $(if $(ASKCQ_TRAINED),$(EXP)/ambignq.cq.askcq.jsonl,$(EXP)/ambignq.cq.llm.pred.jsonl)
	$(call stage,$(CQ) answer --preset askcq $(LLM) --reranker $(MODEL_RERANK))
$(S)/ambignq.cqa.%.json: $(EXP)/ambignq.cqa.%.jsonl
	$(call score,cbqa)

# End to end (AskCQ Table 6 layout): detect -> CQ only for ambiguous -> answer per option.
$(EXP)/ambignq.e2e.cq.jsonl: $(EXP)/ambignq.det.llm.jsonl
	$(call stage,$(CQ) gen-cq --method llm $(LLM))
$(EXP)/ambignq.e2e.jsonl: $(EXP)/ambignq.e2e.cq.jsonl | $(MODEL_READER)
	$(call stage,$(CQA))
$(S)/ambignq.e2e.json: $(EXP)/ambignq.e2e.jsonl
	$(call score,cbqa)

ASKCQ := $(foreach m,llm classifier answers always never,$(S)/ambignq.det.$(m).json) \
         $(if $(WITH_GENCQ),$(S)/ambignq.cq.finetuned.json) \
         $(foreach m,llm zeroshot fromdqs grounded,$(S)/ambignq.cq.$(m).json $(S)/ambignq.cqa.$(m).json) \
         $(S)/ambignq.cq.llm.pred.json $(S)/ambignq.cq.llm.gold.json $(S)/ambignq.cqa.fromdqs.llm.json \
         $(S)/ambignq.cqa.preset.json \
         $(S)/ambignq.e2e.json $(foreach m,$(RETRIEVERS),$(S)/ambignq.ret.$(m).retrieval.json)
exp-askcq: $(ASKCQ)

# ---- AmbigQA (Min et al. 2020) and REFUEL (Gao et al. 2021), model tier ----------------------
$(EXP)/ambignq.qd.jsonl: $(EXP)/ambignq.multi.jsonl
	$(call stage,$(CQ) disambiguate --method qd $(LLM))
# the same question writer over the extractive reader's answers (AmbigQA's pipeline, competent reader)
$(EXP)/ambignq.qd.extractive.jsonl: $(EXP)/ambignq.multi.extractive.jsonl
	$(call stage,$(CQ) disambiguate --method qd $(LLM))
# QD as AmbigQA's released model reads its input (--preset ambigqa: answer, question, every other
# answer, passages in reranked order up to 1,024 tokens, DQs kept as generated)
$(EXP)/ambignq.multi.preset.jsonl: $(RR_DEEP)
	$(call stage,$(CQ) answer --preset ambigqa $(LLM))
$(EXP)/ambignq.qd.preset.jsonl: $(EXP)/ambignq.multi.preset.jsonl
	$(call stage,$(CQ) disambiguate --preset ambigqa $(LLM))
# DISAMBIG-FIRST (AmbigQA §5): (1) the trained classifier on the question alone, (2) closed-book DQs
# for the questions it calls ambiguous (the others keep their question), (3) each DQ retrieved for
# and read. The earlier closed-book DQ-and-answer pairs (rac without passages) stay as .rac.
$(EXP)/ambignq.disambigfirst.det.jsonl: $(RR)
	@test -d $(MODEL_DETECT) || { echo "no detector at $(MODEL_DETECT): pass MODEL_DETECT=DIR of a 'cq train detect' run"; exit 1; }
	$(call stage,$(CQ) detect --preset disambig-first --model $(MODEL_DETECT) --device $(DEVICE))
ifeq ($(MODEL_DETECT),$(CQ_MODELS)/detect)
$(EXP)/ambignq.disambigfirst.det.jsonl: | $(MODEL_DETECT)
endif
$(EXP)/ambignq.disambigfirst.dq.jsonl: $(EXP)/ambignq.disambigfirst.det.jsonl
	$(call stage,$(CQ) disambiguate --preset disambig-first $(LLM))
$(EXP)/ambignq.disambigfirst.jsonl: $(EXP)/ambignq.disambigfirst.dq.jsonl $(INDEX)/cq_index.json | $(MODEL_READER)
	$(call stage,$(CQ) answer --mode dqs --index $(INDEX) --preset disambig-first $(if $(DENSE),,--retriever bm25) $(READER))
$(EXP)/ambignq.disambigfirst.rac.jsonl: $(RR)
	$(call stage,$(CQ) disambiguate --method rac --passages 0 $(LLM))
# REFUEL: predicted answers (with round trip and/or verification), then a question for each.
REFUEL := rt verify rt-verify
$(foreach v,$(REFUEL),$(EXP)/ambignq.multi.$(v).jsonl): $(EXP)/ambignq.multi.%.jsonl: $(RR)
	$(call stage,$(CQ) answer --mode multi $(LLM) $(if $(findstring rt,$*),--round-trip) $(if $(findstring verify,$*),--verify))
$(call after,$(EXP)/ambignq.multi.rt.jsonl $(EXP)/ambignq.multi.verify.jsonl,$(EXP)/ambignq.multi.jsonl)
$(call after,$(EXP)/ambignq.multi.rt-verify.jsonl,$(EXP)/ambignq.multi.rt.jsonl)
$(foreach v,$(REFUEL),$(EXP)/ambignq.refuel.$(v).jsonl): $(EXP)/ambignq.refuel.%.jsonl: $(EXP)/ambignq.multi.%.jsonl
	$(call stage,$(CQ) disambiguate --method qd $(LLM))
# REFUEL without round trip or verification runs the qd cell's two commands: a copy, not a rerun.
$(EXP)/ambignq.refuel.plain.jsonl: $(EXP)/ambignq.qd.jsonl
	@echo 'copy  $(notdir $@) (= $(notdir $<))' && cp $<.cmd $@.cmd && cp $<.wall $@.wall && cp $< $@
$(S)/ambignq.%.ambigqa.json: $(EXP)/ambignq.%.jsonl
	$(call score,ambigqa)

exp-ambigqa: $(S)/ambignq.qd.ambigqa.json $(S)/ambignq.qd.extractive.ambigqa.json $(S)/ambignq.qd.preset.ambigqa.json \
             $(S)/ambignq.disambigfirst.ambigqa.json $(S)/ambignq.disambigfirst.rac.ambigqa.json \
             $(S)/ambignq.multi.ambigqa.json $(S)/ambignq.multi.extractive.ambigqa.json $(S)/ambignq.multi.preset.ambigqa.json
exp-refuel: $(foreach v,plain $(REFUEL),$(S)/ambignq.refuel.$(v).ambigqa.json)
# REFUEL as its authors ran it (--preset refuel, docs/methods.md): a DQ for every answer, every DQ re-asked,
# (DQ, answer) pairs verified with keep-best. Its threshold (-6.1, the paper's, for REFUEL's BART verifier)
# is re-tuned for cq's reader by `make tune-refuel-threshold` (THRESHOLD_REFUEL= sets the one this cell uses).
THRESHOLD_REFUEL ?=
$(EXP)/ambignq.refuel.preset.jsonl: $(RR_DEEP)
	$(call stage,$(CQ) answer --preset refuel $(LLM) $(if $(THRESHOLD_REFUEL),--verify-threshold $(THRESHOLD_REFUEL)))
exp-refuel: $(S)/ambignq.refuel.preset.ambigqa.json

# ---- REFUEL's verification threshold, tuned on a dev split the grid does not score --------------
# The first N_TUNE covered AmbigNQ dev questions outside the model tier (the first N_MODEL, which every
# REFUEL cell scores), retrieved and reranked as RR_DEEP (the preset cell's pool); answered once with
# every answer's best pair kept (--verify-threshold -1e9), then each threshold of the release's grid re-applies the keep-best rule
# offline (bench/tune_refuel_threshold.py), by the AmbigQA answer F1; the report goes to TUNE_REPORT.
N_TUNE      ?= 100
TUNE        := $(EXP)/tune-refuel
TUNE_REPORT ?= docs/refuel-threshold.md
$(TUNE)/tune.ids: $(EXP)/covered.ids $(EXP)/ambignq.m.jsonl
	@mkdir -p $(TUNE)
	$(BIN)/python -c "import json,sys; grid={json.loads(l)['id'] for l in open(sys.argv[2])}; \
	  [print(i) for i in open(sys.argv[1]).read().split() if i not in grid]" $^ > $@
$(TUNE)/ambignq.jsonl: $(TUNE)/tune.ids
	$(BIN)/cq convert ambignq $(DATA)/ambignq/dev_light.json --ids $< --limit $(N_TUNE) -o $@.part && mv $@.part $@
$(TUNE)/ambignq.ret.jsonl: $(TUNE)/ambignq.jsonl $(INDEX)/cq_index.json
	$(call stage,$(CQ) retrieve --index $(INDEX) --method $(DEEP_METHOD) --hits $(HITS_DEEP))
$(TUNE)/ambignq.rr.jsonl: $(TUNE)/ambignq.ret.jsonl
	$(call stage,$(CQ) rerank --top $(HITS_DEEP) --model $(MODEL_RERANK) --device $(DEVICE))
$(TUNE)/ambignq.refuel.jsonl: $(TUNE)/ambignq.rr.jsonl
	$(call stage,$(CQ) answer --preset refuel $(LLM) --verify-threshold -1e9)
tune-refuel-threshold: $(TUNE)/ambignq.refuel.jsonl
	$(BIN)/python bench/tune_refuel_threshold.py $< --out $(TUNE_REPORT) \
	  --command "make tune-refuel-threshold N_TUNE=$(N_TUNE) MODEL_LLM=$(MODEL_LLM)"
.PHONY: tune-refuel-threshold

# ---- CLAM (Kuhn et al. 2022): one record per intended DQ, a simulated user answers the CQ -----
# Model tier; each strategy's stages are files: [clam.det.S ->] clam.cq.S -> clam.oracle.S -> clam.S.
# The CLAM cells run `--preset clam` (docs/methods.md): one LLM detects (log p(True) > -0.3), writes
# the CQ closed-book, plays the user (given the intended DQ) and answers the dialogue closed-book.
#   never      default GPT: the LLM answers the question alone         (§5.1 baseline)
#   always     CLAM's CQ for every question                             (§5.1 baseline)
#   prompting  the LLM decides itself, under a preamble inviting clarification (§5.1 baseline)
#   clam       CLAM (Algorithm 1)
# cq's variants kept because they answer a question of their own:
#   classifier the trained classifier decides when to ask (does a better judge help CLAM?)
#   fromdqs    CQs built from the gold DQs (the upper bound of asking; reads gold)
#   openbook   cq's earlier CLAM-style cell: LLM margin detector at 0, few-shot CAmbigNQ CQ, overlap
#              user, the extractive reader over passages (what retrieval adds to the same protocol)
CLAM_ORACLE := $(CQ) oracle --preset clam $(LLM)
CLAM_ANSWER := $(CQ) answer --preset clam $(LLM)
$(EXP)/clam.jsonl: $(RR)
	@$(call cell,$(CQ) oracle --expand -o $@.part < $<,,$<) && mv $@.part $@ && rm -f $@.part.attempts
	@{ cat $<.cmd; echo '  | cq oracle --expand'; } > $@.cmd
$(EXP)/clam.never.jsonl: $(EXP)/clam.jsonl
	$(call stage,$(CLAM_ANSWER))
# Always asks after CLAM's detector has scored every question (the CQs do not read the score; the records carry
# it, so the cost-of-clarifying curve can re-decide each question at every threshold: cq score --curves below).
$(EXP)/clam.cq.always.jsonl: $(EXP)/clam.det.clam.jsonl
	$(call stage,$(CQ) gen-cq --preset clam --all $(LLM))
$(EXP)/clam.cq.prompting.jsonl: $(EXP)/clam.jsonl
	$(call stage,$(CQ) gen-cq --method clam-prompting --all $(LLM))
$(EXP)/clam.det.clam.jsonl: $(EXP)/clam.jsonl
	$(call stage,$(CQ) detect --preset clam $(LLM))
$(EXP)/clam.cq.clam.jsonl: $(EXP)/clam.det.clam.jsonl
	$(call stage,$(CQ) gen-cq --preset clam $(LLM))
$(EXP)/clam.det.classifier.jsonl: $(EXP)/clam.jsonl | $(MODEL_DETECT)
	$(call stage,$(CQ) detect --method classifier --model $(MODEL_DETECT) --passages $(DETECT_PASSAGES) --device $(DEVICE))
$(EXP)/clam.cq.classifier.jsonl: $(EXP)/clam.det.classifier.jsonl
	$(call stage,$(CQ) gen-cq --preset clam $(LLM))
$(EXP)/clam.cq.fromdqs.jsonl: $(EXP)/clam.jsonl
	$(call stage,$(CQ) gen-cq --method from-dqs --all)
CLAM_ASKING := always prompting clam classifier fromdqs
$(foreach s,$(CLAM_ASKING),$(EXP)/clam.oracle.$(s).jsonl): $(EXP)/clam.oracle.%.jsonl: $(EXP)/clam.cq.%.jsonl
	$(call stage,$(CLAM_ORACLE))
$(foreach s,$(filter-out prompting,$(CLAM_ASKING)),$(EXP)/clam.$(s).jsonl): $(EXP)/clam.%.jsonl: $(EXP)/clam.oracle.%.jsonl
	$(call stage,$(CLAM_ANSWER))
$(EXP)/clam.prompting.jsonl: $(EXP)/clam.oracle.prompting.jsonl
	$(call stage,$(CLAM_ANSWER) --preamble prompting)
# cq's open-book variant (the grid's CLAM cell before the preset).
$(EXP)/clam.det.openbook.jsonl: $(EXP)/clam.jsonl
	$(call stage,$(CQ) detect --method llm $(LLM))
$(EXP)/clam.cq.openbook.jsonl: $(EXP)/clam.det.openbook.jsonl
	$(call stage,$(CQ) gen-cq --method llm $(LLM))
$(EXP)/clam.oracle.openbook.jsonl: $(EXP)/clam.cq.openbook.jsonl
	$(call stage,$(CQ) oracle)
$(EXP)/clam.openbook.jsonl: $(EXP)/clam.oracle.openbook.jsonl | $(MODEL_READER)
	$(call stage,$(CQ) answer --mode cq --selected $(READER))
# Each CLAM cell's score carries the cost of clarifying (docs/metrics.md, clam --curves): the lambda sweep, and the
# risk-coverage curve over the detector's threshold with the never cell's answers as the direct path (whole for
# clam.always; the paired comparisons score without it).
$(S)/clam.%.json: SCORE_clam = --curves --direct $(EXP)/clam.never.jsonl
$(S)/clam.%.json: $(EXP)/clam.%.jsonl | $(EXP)/clam.never.jsonl
	$(call score,clam)
exp-clam: $(foreach s,never $(CLAM_ASKING) openbook,$(S)/clam.$(s).json)

# ---- Tree of Clarifications (Kim et al. 2023) on ASQA: first N_ASQA questions ------------------
# Stages: asqa.ret.R -> asqa.rr.R -> asqa.dq.V.R (disambiguations) -> asqa.toc.V.R (long answer).
$(foreach m,$(RETRIEVERS),$(EXP)/asqa.rr.$(m).jsonl): $(EXP)/asqa.rr.%.jsonl: $(EXP)/asqa.ret.%.jsonl
	$(call stage,$(RERANK))
TOC_FLAGS_rac   :=
TOC_FLAGS_tree  := --tree
TOC_FLAGS_prune := --tree --prune
TOC := $(foreach v,rac tree prune,asqa.toc.$(v).bm25) $(if $(DENSE),asqa.toc.rac.dense asqa.toc.rac.hybrid)
# The prune cell prunes the tree cell's trees (--reuse-tree: the records of growing and pruning in
# one run, without growing them twice); every other cell grows its own from the reranked passages.
TOC_DQ := $(filter-out $(EXP)/asqa.dq.prune.%,$(foreach c,$(TOC),$(EXP)/$(subst .toc.,.dq.,$(c)).jsonl))
define toc_dq
$(filter %.$(1).jsonl,$(TOC_DQ)): $(EXP)/asqa.dq.%.$(1).jsonl: $(EXP)/asqa.rr.$(1).jsonl
	$$(call stage,$$(CQ) disambiguate --method rac $$(TOC_FLAGS_$$*) $$(LLM))
endef
$(foreach m,$(RETRIEVERS),$(eval $(call toc_dq,$(m))))
$(foreach m,$(RETRIEVERS),$(call after,$(EXP)/asqa.dq.tree.$(m).jsonl,$(EXP)/asqa.dq.rac.$(m).jsonl))
$(EXP)/asqa.dq.prune.%.jsonl: $(EXP)/asqa.dq.tree.%.jsonl
	$(call stage,$(CQ) disambiguate --method rac $(TOC_FLAGS_prune) --reuse-tree $(LLM))
$(foreach c,$(TOC),$(EXP)/$(c).jsonl): $(EXP)/asqa.toc.%.jsonl: $(EXP)/asqa.dq.%.jsonl
	$(call stage,$(CQ) answer --mode long $(LLM))
$(S)/asqa.toc.%.json: $(EXP)/asqa.toc.%.jsonl
	$(call score,asqa)

# The released loop (--preset toc, cqtools/presets/toc.py), on the first N_TOC of the ASQA questions:
# it costs about 16 expansions and their verifications per question (docs/benchmarks/toc.md). Its
# records keep the whole retrieved pool (retrieve --preset toc: 100 passages, no rerank --top: the
# method reranks the pool for each node), pooled from BM25 and dense as the preset says where the index
# has dense vectors (DENSE=1: cell asqa.toc.preset.hybrid), BM25 alone in a smoke run (asqa.toc.preset.bm25);
# its kNN demos come from the ASQA dev questions the grid
# does not score (asqa.shots.jsonl, with their long answers); it writes the long answer in the same run.
# cq's own variants above stay as cells: rac/tree/prune (does a tree, does pruning help over the
# same 5 passages) and dense/hybrid (which retriever).
CONVERT_SHOTS := cq convert asqa $(DATA)/asqa/dev.json --exclude-ids $(EXP)/asqa.jsonl
$(EXP)/asqa.shots.jsonl: $(EXP)/asqa.jsonl
	@$(call cell,$(BIN)/$(CONVERT_SHOTS) -o $@)
	@echo '$(CONVERT_SHOTS)' > $@.cmd
$(EXP)/asqa.t.jsonl: $(EXP)/asqa.jsonl
	$(call first,$(N_TOC))
TOC_POOL := $(if $(DENSE),hybrid,bm25)
$(EXP)/asqa.t.pool.$(TOC_POOL).jsonl: $(EXP)/asqa.t.jsonl $(INDEX)/cq_index.json
	$(call stage,$(CQ) retrieve --preset toc --index $(INDEX)$(if $(DENSE),, --method bm25))
$(EXP)/asqa.toc.preset.$(TOC_POOL).jsonl: $(EXP)/asqa.t.pool.$(TOC_POOL).jsonl $(EXP)/asqa.shots.jsonl
	$(call stage,$(CQ) disambiguate --preset toc --shots $(EXP)/asqa.shots.jsonl $(LLM))
exp-toc: $(foreach c,$(TOC) asqa.toc.preset.$(TOC_POOL),$(S)/$(c).json) \
         $(foreach m,$(RETRIEVERS),$(S)/asqa.ret.$(m).retrieval.json)

# ---- paired comparisons: cq score --paired B < A on the ids both score --------------------------
# $(call pair,TASK,A,B): $(P)/A--B.json, the paired bootstrap of B - A for every metric of TASK
# (pairs across tiers compare on the model tier's questions). bench/grid/report.py writes one sentence each.
define pair
$(P)/$(2)--$(3).json: $(EXP)/$(2).jsonl $(EXP)/$(3).jsonl
	@mkdir -p $$(dir $$@)
	@$$(call cell,$$(GEN_ENV) $$(call slurm,$$(SCORE_$(1)))$$(CQ) score --task $(1) --paired $(EXP)/$(3).jsonl --intersect --n-boot $$(N_BOOT) --seed 0 $$(SCORE_$(1)) < $(EXP)/$(2).jsonl > $$@.part)
	@mv $$@.part $$@
PAIRS += $(P)/$(2)--$(3).json
endef
PAIRS :=
$(eval $(call pair,detect,ambignq.det.always,ambignq.det.classifier))
$(eval $(call pair,detect,ambignq.det.llm,ambignq.det.classifier))
$(eval $(call pair,cq,ambignq.cq.zeroshot,ambignq.cq.llm))
$(eval $(call pair,cq,ambignq.cq.llm,ambignq.cq.grounded))
$(eval $(call pair,cbqa,ambignq.cqa.llm,ambignq.cqa.grounded))
$(if $(WITH_GENCQ),$(eval $(call pair,cq,ambignq.cq.llm,ambignq.cq.finetuned)))
$(eval $(call pair,cbqa,ambignq.cqa.zeroshot,ambignq.cqa.llm))
$(eval $(call pair,cbqa,ambignq.cqa.fromdqs,ambignq.cqa.llm))
$(eval $(call pair,cbqa,ambignq.cqa.fromdqs.llm,ambignq.cqa.fromdqs))
$(eval $(call pair,ambigqa,ambignq.multi,ambignq.multi.extractive))
$(eval $(call pair,ambigqa,ambignq.qd,ambignq.qd.extractive))
$(eval $(call pair,ambigqa,ambignq.refuel.plain,ambignq.refuel.rt-verify))
# each paper's preset against cq's own variant of the same step (issue 24)
$(eval $(call pair,ambigqa,ambignq.multi,ambignq.multi.preset))
$(eval $(call pair,ambigqa,ambignq.qd,ambignq.qd.preset))
$(eval $(call pair,ambigqa,ambignq.refuel.plain,ambignq.refuel.preset))
$(eval $(call pair,ambigqa,ambignq.disambigfirst.rac,ambignq.disambigfirst))
$(eval $(call pair,cq,ambignq.cq.llm,ambignq.cq.llm.pred))
$(eval $(call pair,cbqa,ambignq.cqa.llm,ambignq.cqa.preset))
$(eval $(call pair,clam,clam.never,clam.clam))
$(eval $(call pair,clam,clam.always,clam.clam))
$(eval $(call pair,clam,clam.never,clam.classifier))
$(eval $(call pair,clam,clam.always,clam.classifier))
$(eval $(call pair,clam,clam.never,clam.fromdqs))
$(eval $(call pair,clam,clam.prompting,clam.clam))
$(eval $(call pair,clam,clam.clam,clam.openbook))
$(eval $(call pair,asqa,asqa.toc.rac.bm25,asqa.toc.prune.bm25))
$(eval $(call pair,asqa,asqa.toc.prune.bm25,asqa.toc.preset.$(TOC_POOL)))
pairs: $(PAIRS)

# ---- the simulated user's agreement (issue 46 item 5) ----------------------------------------------
# The gold-DQ CQs of clam.cq.fromdqs answered by three oracles: CLAM's (the preset's, clam.oracle.fromdqs), cq's
# LLM oracle with its own prompt, and with a terse one (bench/grid/oracle_terse.txt); each scored with
# `cq score --task oracle` (agreement with the intended DQ's option, chance beside it), and the three together for
# the spread of agreement across oracles with its interval (docs/metrics.md). The results page's oracle section.
ORACLE_TERSE := bench/grid/oracle_terse.txt
$(EXP)/clam.oracle.fromdqs.llm.jsonl: $(EXP)/clam.cq.fromdqs.jsonl
	$(call stage,$(CQ) oracle --method llm $(LLM))
$(EXP)/clam.oracle.fromdqs.terse.jsonl: $(EXP)/clam.cq.fromdqs.jsonl $(ORACLE_TERSE)
	$(call stage,$(CQ) oracle --method llm --prompt $(ORACLE_TERSE) $(LLM))
# The same LLM oracle as users of other kinds (issue 59, `cq oracle --persona`): terse, vague, uncooperative; with
# cq's own prompt (oracle.llm, the cooperative user) they give the spread of agreement across personas.
PERSONAS := terse vague uncooperative
$(foreach p,$(PERSONAS),$(EXP)/clam.oracle.fromdqs.persona-$(p).jsonl): $(EXP)/clam.oracle.fromdqs.persona-%.jsonl: $(EXP)/clam.cq.fromdqs.jsonl
	$(call stage,$(CQ) oracle --method llm --persona $* $(LLM))
# oracle.NAME scores $(EXP)/clam.oracle.fromdqs[.NAME].jsonl (clam: the preset's, no suffix)
ORACLES := clam llm terse $(foreach p,$(PERSONAS),persona-$(p))
PERSONA_RUNS = $(call oracle_run,llm) $(foreach p,$(PERSONAS),$(EXP)/clam.oracle.fromdqs.persona-$(p).jsonl)
oracle_run = $(EXP)/clam.oracle.fromdqs$(if $(filter-out clam,$(1)),.$(1)).jsonl
$(foreach o,$(ORACLES),$(eval $(S)/oracle.$(o).json: $(call oracle_run,$(o))))
$(foreach o,$(ORACLES),$(S)/oracle.$(o).json):
	$(call score,oracle)
$(S)/oracle.spread.json: $(foreach o,clam llm terse,$(call oracle_run,$(o)))
	@mkdir -p $(dir $@)
	@$(call cell,$(call slurm,$(CQ) score)$(CQ) score --task oracle $^ --format json --n-boot $(N_BOOT) --seed 0 > $@.part,,$<) && mv $@.part $@ && rm -f $@.part.attempts
	@echo '  | cq score --task oracle $(notdir $^) --n-boot $(N_BOOT) --seed 0' > $@.cmd
$(S)/oracle.personas.json: $(PERSONA_RUNS)
	@mkdir -p $(dir $@)
	@$(call cell,$(call slurm,$(CQ) score)$(CQ) score --task oracle $^ --format json --n-boot $(N_BOOT) --seed 0 > $@.part,,$<) && mv $@.part $@ && rm -f $@.part.attempts
	@echo '  | cq score --task oracle $(notdir $^) --n-boot $(N_BOOT) --seed 0' > $@.cmd
exp-oracle: $(foreach o,$(ORACLES),$(S)/oracle.$(o).json) $(S)/oracle.spread.json $(S)/oracle.personas.json

# ---- the field's other ambiguity benchmarks (issue 46 item 6) --------------------------------------------
# A cell per data set reachable here, on N_FIELD questions each, read from FIELD_DATA (default DATA: `cq data get
# clamber condambigqa --dir DIR` fills a directory; without network, put the authors' file there by hand and run
# the same command: docs/data.md). A data set whose file is absent is skipped with one line saying how to get it.
#   field.clamber.det.clam     CLAMBER: when to clarify, CLAM's LLM detector (--preset clam), scored per category
#                              (--by gold.category: FD epistemic, MC aleatoric, LA linguistic)
#   field.condambigqa.multi    CondAmbigQA: every answer, read from the passages the data set hands the system
#                              (cq answer --mode multi), scored against the answers of its conditions (--task cbqa)
# Not reachable on this project's machines (no Hugging Face hub): AmbigDocs and ALCE's ASQA; AMBIGNQ-CQ's CSVs are
# git blobs whose content its fetched repository does not hold. `cq convert ambigdocs|alce-asqa|ambignq-cq` reads them
# where they are.
FIELD_DATA       ?= $(DATA)
N_FIELD          ?= $(N_MODEL)
CLAMBER_FILE     ?= $(FIELD_DATA)/clamber/clamber_benchmark.jsonl
CONDAMBIGQA_FILE ?= $(FIELD_DATA)/condambigqa/mcaqa.json
# N_FIELD records evenly spread over the converted file (every k-th, k = records / N_FIELD): CLAMBER's file is
# sorted by category, so its first lines are all one.
spread_sample = awk -v n=$(N_FIELD) -v t="$$(wc -l < $(1))" 'BEGIN { s = int(t / n); if (s < 1) s = 1 } (NR - 1) % s == 0 && k++ < n' $(1)
define field_questions
	@mkdir -p $(dir $@)
	@$(call cell,$(CQ) convert $(1) $< -o $@.all && $(call spread_sample,$@.all) > $@.part,,$<) && mv $@.part $@ && rm -f $@.all $@.part.attempts
	@echo 'cq convert $(1) $< | every k-th record, $(N_FIELD) in all' > $@.cmd
endef
$(EXP)/field.clamber.jsonl: $(CLAMBER_FILE) | $(STAMP)
	$(call field_questions,clamber)
$(EXP)/field.condambigqa.jsonl: $(CONDAMBIGQA_FILE) | $(STAMP)
	$(call field_questions,condambigqa)
$(EXP)/field.clamber.det.clam.jsonl: $(EXP)/field.clamber.jsonl
	$(call stage,$(CQ) detect --preset clam $(LLM))
$(EXP)/field.condambigqa.multi.jsonl: $(EXP)/field.condambigqa.jsonl
	$(call stage,$(CQ) answer --mode multi $(LLM))
$(S)/field.clamber.det.clam.json: SCORE_detect = --by gold.category
$(S)/field.clamber.%.json: $(EXP)/field.clamber.%.jsonl
	$(call score,detect)
$(S)/field.condambigqa.%.json: $(EXP)/field.condambigqa.%.jsonl
	$(call score,cbqa)
FIELD_CELLS := $(if $(wildcard $(CLAMBER_FILE)),$(S)/field.clamber.det.clam.json) \
               $(if $(wildcard $(CONDAMBIGQA_FILE)),$(S)/field.condambigqa.multi.json)
exp-field: $(FIELD_CELLS)
	@$(if $(wildcard $(CLAMBER_FILE)),,echo 'skip  CLAMBER: no $(CLAMBER_FILE); get it: cq data get clamber --dir $(FIELD_DATA)')
	@$(if $(wildcard $(CONDAMBIGQA_FILE)),,echo 'skip  CondAmbigQA: no $(CONDAMBIGQA_FILE); get it: cq data get condambigqa --dir $(FIELD_DATA)')
	@echo 'skip  AmbigDocs, ALCE-ASQA: on the Hugging Face hub, not reachable here; AMBIGNQ-CQ: its CSV content is absent here'

# ---- everything, one report -------------------------------------------------------------------
# The reference bundle (issue 59; cqtools/score/reference.py): every scored cell's records and per-record scores as
# $(EXP)/reference/CELL.jsonl.gz with a manifest (commit, models, flags, the data files' checksums); a later run is
# compared with it by `cq score --task T --against $(EXP)/reference --cell CELL RUN.jsonl`.
define bundle
	@$(BIN)/python bench/reference.py grid --scores $(S) --out $(EXP)/reference --commit "$$(git rev-parse HEAD 2>/dev/null)" \
	  --models 'LLM $(MODEL_LLM); extractive reader $(MODEL_READER); reranker $(MODEL_RERANK); detector $(MODEL_DETECT)' \
	  --flags '$(MAKEOVERRIDES)' --data $(DATA)/ambignq/dev_light.json $(DATA)/asqa/dev.json $(DATA)/corpus/passages.jsonl
endef

# The report from the score files present: `make compare` writes it at the end; `make report
# PARTIAL='why'` writes it from the cells finished so far and says so (make compare resumes the rest). A WORK
# that `make bench-smoke` ran in has its run.json (seconds, load): the report states them at the top.
define report
	@echo 'report  $(RESULTS)'
	@$(BIN)/python bench/grid/report.py results --scores $(S) --pairs $(P) --out $(RESULTS) \
	  --command 'make compare $(if $(N_ALL),N_ALL=$(N_ALL) )N_MODEL=$(N_MODEL) N_ASQA=$(N_ASQA) N_TOC=$(N_TOC)$(if $(N_DEEP), N_DEEP=$(N_DEEP))' \
	  --tiers "$$(wc -l < $(EXP)/ambignq.jsonl),$$(cat $(EXP)/ambignq.m.jsonl 2>/dev/null | wc -l),$$(cat $(EXP)/asqa.jsonl 2>/dev/null | wc -l),$$(cat $(EXP)/asqa.t.jsonl 2>/dev/null | wc -l),$$(cat $(RR_DEEP) 2>/dev/null | wc -l)" \
	  --models 'LLM $(MODEL_LLM); extractive reader $(MODEL_READER); reranker $(MODEL_RERANK); detector $(MODEL_DETECT) (--passages $(DETECT_PASSAGES))' \
	  --device $(DEVICE) --index-wall $(INDEX).wall $(if $(wildcard $(WORK)/run.json),--run $(WORK)/run.json) $(if $(PARTIAL),--partial '$(PARTIAL)')
	@$(BIN)/python bench/grid/figures.py --scores $(S) --pairs $(P) --out $(dir $(RESULTS))figures
endef

# ---- the papers' table (issue 59, item 5) -----------------------------------------------------------
# Every preset's cell scored with its paper's metrics, each number with its 95% interval beside the paper's own
# (bench/paper_table.py, cited per row), written to PAPER_TABLE. On a served model (docs/paper-table.md says how):
#   make paper-table MODEL_LLM=openai:NAME API_BASE=http://HOST:PORT/v1 N=200
PAPER_TABLE ?= docs/paper-table.md
PAPER_CELLS := $(foreach c,ambignq.disambigfirst.ambigqa ambignq.qd.preset.ambigqa ambignq.refuel.preset.ambigqa \
  asqa.toc.preset.$(TOC_POOL) ambignq.det.classifier ambignq.cq.llm.pred ambignq.cqa.preset,$(S)/$(c).json)
paper-table: $(PAPER_CELLS)
	@$(BIN)/python bench/paper_table.py --scores $(S) --out $(PAPER_TABLE) \
	  --models 'LLM $(MODEL_LLM)$(if $(API_BASE), at $(API_BASE)); extractive reader $(MODEL_READER); reranker $(MODEL_RERANK); detector $(MODEL_DETECT)' \
	  --command 'make paper-table MODEL_LLM=$(MODEL_LLM)$(if $(API_BASE), API_BASE=$(API_BASE))$(if $(N), N=$(N))'
	@$(BIN)/python bench/grid/cell.py stop

compare: exp-askcq exp-ambigqa exp-refuel exp-clam exp-oracle exp-field exp-toc pairs
	$(report)
	$(bundle)
	@$(BIN)/python bench/grid/cell.py stop

report:
	$(report)

.PHONY: paper-table report exp-askcq exp-ambigqa exp-refuel exp-clam exp-oracle exp-field exp-toc pairs compare
.SECONDARY:
