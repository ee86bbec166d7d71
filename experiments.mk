# The papers' experiment grids as make targets (included by the Makefile).
# Every cell is a pipeline of cq commands; intermediate JSONL is cached as files so cells share
# prefixes (retrieve once, rerank once, reuse everywhere). Each file F has F.cmd beside it: the
# full pipeline that made it, which `make compare` prints next to each number.
#
#   make exp-askcq N=30          AskCQ: detection, CQ generation, clarification-based QA
#                                (trains the detector first: make train-detect, unless MODEL_DETECT=DIR)
#   make exp-ambigqa / exp-refuel / exp-clam / exp-toc
#   make compare                 all of the above, then docs/results.md
#
# Variables: DATA (../shared/data), N (first N covered questions), MODEL_LLM, MODEL_RERANK,
# MODEL_DETECT (a `cq train detect` dir), DEVICE (auto|cpu|cuda), HITS (retrieval depth).

DATA         ?= $(SHARED)
N            ?= 30
DEVICE       ?= auto
HITS         ?= 20
MODEL_LLM    ?= HuggingFaceTB/SmolLM2-135M-Instruct
MODEL_RERANK ?= cross-encoder/ms-marco-MiniLM-L-12-v2
MODEL_DETECT ?= $(WORK)/models/detect
EXP          ?= $(WORK)/exp-N$(N)
S            := $(EXP)/scores
LLM          := --model $(MODEL_LLM) --device $(DEVICE)

# $(call run,COMMAND): COMMAND < first prerequisite > target, atomically; target.cmd = the pipeline so far.
define run
	@mkdir -p $(dir $@)
	( $(1) ) < $< > $@.part && mv $@.part $@
	@{ cat $<.cmd 2>/dev/null || echo '# input: $<'; echo '  | $(subst $(CQ),cq,$(strip $(1)))'; } > $@.cmd
endef

# $(call score,TASK,FLAGS): score the first prerequisite into target (JSON) + target.cmd.
define score
	@mkdir -p $(dir $@)
	$(CQ) score --task $(1) $(2) < $< > $@.part && mv $@.part $@
	@{ cat $<.cmd 2>/dev/null; echo '  | cq score --task $(1) $(strip $(2))'; } > $@.cmd
endef

# ---- shared prefixes ------------------------------------------------------------------------
$(EXP)/index/cq_index.json: | $(STAMP)
	$(CQ) index --corpus $(DATA)/corpus/passages.jsonl --out $(EXP)/index --dense --overwrite

# Questions the shared corpus was built for (its source_qid): selection of the evaluation set only.
$(EXP)/covered.ids: | $(STAMP)
	@mkdir -p $(EXP)
	$(BIN)/python -c "import json,sys; [print(i) for i in sorted({json.loads(l)['source_qid'] for l in open(sys.argv[1])})]" \
	  $(DATA)/corpus/passages.jsonl > $@

$(EXP)/ambignq.jsonl: $(EXP)/covered.ids
	$(CQ) convert ambignq $(DATA)/ambignq/dev_light.json --ids $< --limit $(N) --silver-cq > $@
	@echo 'cq convert ambignq $(DATA)/ambignq/dev_light.json --ids $< --limit $(N) --silver-cq' > $@.cmd

$(EXP)/asqa.jsonl: $(EXP)/covered.ids
	$(CQ) convert asqa $(DATA)/asqa/dev.json --ids $< --limit $(N) > $@
	@echo 'cq convert asqa $(DATA)/asqa/dev.json --ids $< --limit $(N)' > $@.cmd

$(EXP)/%.ret.bm25.jsonl $(EXP)/%.ret.dense.jsonl $(EXP)/%.ret.hybrid.jsonl: $(EXP)/%.jsonl $(EXP)/index/cq_index.json
	$(foreach m,bm25 dense hybrid,$(CQ) retrieve --index $(EXP)/index --method $(m) --hits $(HITS) < $< > $(EXP)/$*.ret.$(m).jsonl && \
	  { cat $<.cmd; echo '  | cq retrieve --index $(EXP)/index --method $(m) --hits $(HITS)'; } > $(EXP)/$*.ret.$(m).jsonl.cmd &&) true

$(EXP)/%.rr.jsonl: $(EXP)/%.ret.bm25.jsonl
	$(call run,$(CQ) rerank --top 5 --model $(MODEL_RERANK) --device $(DEVICE))

$(S)/%.retrieval.json: $(EXP)/%.jsonl
	$(call score,retrieval,--k 5$(comma)10$(comma)20)
comma := ,

# ---- AskCQ (Lee et al. 2023) -----------------------------------------------------------------
$(EXP)/ambignq.multi.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) answer --mode multi $(LLM))
$(EXP)/ambignq.det.llm.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) detect --method llm $(LLM))
$(EXP)/ambignq.det.answers.jsonl: $(EXP)/ambignq.multi.jsonl
	$(call run,$(CQ) detect --method answers)
$(EXP)/ambignq.det.always.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) detect --method always)
$(EXP)/ambignq.det.never.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) detect --method never)
$(EXP)/ambignq.det.classifier.jsonl: $(EXP)/ambignq.rr.jsonl
	@test -d $(MODEL_DETECT) || { echo "no detector at $(MODEL_DETECT): pass MODEL_DETECT=DIR of a 'cq train detect' run"; exit 1; }
	$(call run,$(CQ) detect --method classifier --model $(MODEL_DETECT) --device $(DEVICE))
# The classifier needs a trained detector: with the default MODEL_DETECT, `make train-detect` runs first
# (once: the directory is the target); MODEL_DETECT=DIR uses a detector you trained elsewhere.
ifeq ($(MODEL_DETECT),$(WORK)/models/detect)
$(EXP)/ambignq.det.classifier.jsonl: | $(MODEL_DETECT)
$(MODEL_DETECT):
	$(MAKE) train-detect DETECT_MODEL=$@
endif
$(S)/ambignq.det.%.json: $(EXP)/ambignq.det.%.jsonl
	$(call score,detect,)

# CQ generation settings: no answers (llm), CLAM zero-shot, gold DQs (from-dqs: upper bound).
$(EXP)/ambignq.cq.llm.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) gen-cq --method llm --all $(LLM))
$(EXP)/ambignq.cq.zeroshot.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) gen-cq --method llm --zero-shot --all $(LLM))
$(EXP)/ambignq.cq.fromdqs.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) gen-cq --method from-dqs --all)
$(S)/ambignq.cq.%.json: $(EXP)/ambignq.cq.%.jsonl
	$(call score,cq,--no-bertscore)

# Clarification-based QA: one answer per option of each CQ setting.
$(EXP)/ambignq.cqa.%.jsonl: $(EXP)/ambignq.cq.%.jsonl
	$(call run,$(CQ) answer --mode cq $(LLM) --reranker $(MODEL_RERANK))
$(S)/ambignq.cqa.%.json: $(EXP)/ambignq.cqa.%.jsonl
	$(call score,cbqa,)

# End to end (AskCQ Table 6 layout): detect -> CQ only for ambiguous -> answer per option.
$(EXP)/ambignq.e2e.jsonl: $(EXP)/ambignq.det.llm.jsonl
	$(call run,$(CQ) gen-cq --method llm $(LLM) | $(CQ) answer --mode cq $(LLM) --reranker $(MODEL_RERANK))
$(S)/ambignq.e2e.json: $(EXP)/ambignq.e2e.jsonl
	$(call score,cbqa,)

ASKCQ := $(foreach m,llm classifier answers always never,$(S)/ambignq.det.$(m).json) \
         $(foreach m,llm zeroshot fromdqs,$(S)/ambignq.cq.$(m).json $(S)/ambignq.cqa.$(m).json) \
         $(S)/ambignq.e2e.json $(S)/ambignq.ret.bm25.retrieval.json $(S)/ambignq.ret.dense.retrieval.json \
         $(S)/ambignq.ret.hybrid.retrieval.json
exp-askcq: $(ASKCQ)

# ---- AmbigQA (Min et al. 2020) and REFUEL (Gao et al. 2021) ----------------------------------
$(EXP)/ambignq.qd.jsonl: $(EXP)/ambignq.multi.jsonl
	$(call run,$(CQ) disambiguate --method qd $(LLM))
$(EXP)/ambignq.disambigfirst.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) disambiguate --method rac --passages 0 $(LLM))
$(EXP)/ambignq.refuel.%.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) answer --mode multi $(LLM) $(if $(findstring rt,$*),--round-trip) $(if $(findstring verify,$*),--verify) \
	  | $(CQ) disambiguate --method qd $(LLM))
$(S)/ambignq.%.ambigqa.json: $(EXP)/ambignq.%.jsonl
	$(call score,ambigqa,)

exp-ambigqa: $(S)/ambignq.qd.ambigqa.json $(S)/ambignq.disambigfirst.ambigqa.json
exp-refuel: $(foreach v,plain rt verify rt-verify,$(S)/ambignq.refuel.$(v).ambigqa.json)

# ---- CLAM (Kuhn et al. 2022): one record per intended DQ, a simulated user answers the CQ -----
$(EXP)/clam.jsonl: $(EXP)/ambignq.rr.jsonl
	$(call run,$(CQ) oracle --expand)
$(EXP)/clam.never.jsonl: $(EXP)/clam.jsonl
	$(call run,$(CQ) answer --mode single $(LLM))
$(EXP)/clam.always.jsonl: $(EXP)/clam.jsonl
	$(call run,$(CQ) gen-cq --method llm --all $(LLM) | $(CQ) oracle | $(CQ) answer --mode cq --selected $(LLM))
$(EXP)/clam.prompting.jsonl: $(EXP)/clam.jsonl
	$(call run,$(CQ) gen-cq --method llm --zero-shot --all $(LLM) | $(CQ) oracle | $(CQ) answer --mode cq --selected $(LLM))
$(EXP)/clam.clam.jsonl: $(EXP)/clam.jsonl
	$(call run,$(CQ) detect --method llm $(LLM) | $(CQ) gen-cq --method llm $(LLM) | $(CQ) oracle \
	  | $(CQ) answer --mode cq --selected $(LLM))
$(S)/clam.%.json: $(EXP)/clam.%.jsonl
	$(call score,clam,)
exp-clam: $(foreach s,never always prompting clam,$(S)/clam.$(s).json)

# ---- Tree of Clarifications (Kim et al. 2023) on ASQA ----------------------------------------
$(EXP)/asqa.rr.%.jsonl: $(EXP)/asqa.ret.%.jsonl
	$(call run,$(CQ) rerank --top 5 --model $(MODEL_RERANK) --device $(DEVICE))
$(EXP)/asqa.toc.rac.%.jsonl: $(EXP)/asqa.rr.%.jsonl
	$(call run,$(CQ) disambiguate --method rac $(LLM) | $(CQ) answer --mode long $(LLM))
$(EXP)/asqa.toc.tree.%.jsonl: $(EXP)/asqa.rr.%.jsonl
	$(call run,$(CQ) disambiguate --method rac --tree $(LLM) | $(CQ) answer --mode long $(LLM))
$(EXP)/asqa.toc.prune.%.jsonl: $(EXP)/asqa.rr.%.jsonl
	$(call run,$(CQ) disambiguate --method rac --tree --prune $(LLM) | $(CQ) answer --mode long $(LLM))
$(S)/asqa.toc.%.json: $(EXP)/asqa.toc.%.jsonl
	$(call score,asqa,--reader $(MODEL_LLM) --device $(DEVICE))
exp-toc: $(foreach v,rac tree prune,$(S)/asqa.toc.$(v).bm25.json) $(S)/asqa.toc.rac.dense.json \
         $(S)/asqa.toc.rac.hybrid.json $(foreach m,bm25 dense hybrid,$(S)/asqa.ret.$(m).retrieval.json)

# ---- everything, one report -------------------------------------------------------------------
compare: exp-askcq exp-ambigqa exp-refuel exp-clam exp-toc
	$(BIN)/python bench/report.py --scores $(S) --out docs/results.md --n $(N)

.PHONY: exp-askcq exp-ambigqa exp-refuel exp-clam exp-toc compare
.SECONDARY:
