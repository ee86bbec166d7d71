"""cq's own stage methods, registered through the plugin hooks like any plugin's (cqtools/plugins.py
DEFAULT_PLUGINS): detectors, CQ methods, readers, oracles, disambiguation methods, answer modes and
``cq convert`` formats, each with its option schema. Importing this module imports no model library."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_detectors(register):
    from . import clam, detect
    from .detect import combined as detect_combined, diverse as detect_diverse

    register("classifier", detect.classifier_detector, options=detect.ClassifierOptions)
    register("llm", detect.load_llm_detector, options=detect.LlmDetectorOptions)
    register("answers", detect.answers_detector, options=detect.AnswersOptions)
    register("diverse", detect_diverse.diverse_detector, options=detect_diverse.DiverseOptions)
    register("tree", detect.tree_detector, options=detect.TreeOptions)
    register("always", detect.constant_detector, options=detect.AlwaysOptions)
    register("never", detect.constant_detector, options=detect.NeverOptions)
    register("clam", clam.clam_detector, options=clam.DetectOptions)
    register("combined", detect_combined.combined_detector, options=detect_combined.CombinedOptions)


@hookimpl
def register_cq_methods(register):
    from . import clam, gen_cq
    from .gen_cq import answers as gen_cq_answers

    register("from-dqs", gen_cq.from_dqs_method, options=gen_cq.FromDqsOptions)
    register("llm", gen_cq.load_llm_method, options=gen_cq.LlmOptions)
    register("clam", clam.clam_cq_method, options=clam.CQOptions)
    register("clam-prompting", clam.prompting_method, options=clam.PromptingOptions)
    register("seq2seq", gen_cq.load_seq2seq_method, options=gen_cq.Seq2SeqOptions)
    register("pred-answers", gen_cq_answers.pred_answers_method, options=gen_cq_answers.PredAnswersOptions)


@hookimpl
def register_answer_modes(register):
    from . import answer, clam
    from .answer import options as O

    register("single", answer.qa_mode("single"), options=O.SingleOptions)
    register("cq", answer.qa_mode("cq"), options=O.CQModeOptions)
    register("multi", answer.qa_mode("multi"), options=O.MultiOptions)
    register("dqs", answer.qa_mode("dqs"), options=O.DqsOptions)
    register("dialogue", clam.dialogue_mode, options=clam.DialogueOptions)
    register("long", answer.long_mode, options=O.LongOptions)


@hookimpl
def register_readers(register):
    from .answer import extractive, fid, options, reader, seqgen

    register("extractive", extractive.extractive_reader, options=options.ExtractiveReaderOptions)
    register("generative", reader.generative_reader, options=options.GenerativeOptions)
    register("seqgen", seqgen.seqgen_reader, options=seqgen.SeqGenOptions)
    register("fid", fid.fid_reader, options=fid.FiDOptions)


@hookimpl
def register_oracles(register):
    from . import clam, oracle

    register("overlap", oracle.overlap_oracle, options=oracle.OverlapOptions)
    register("clam", clam.clam_oracle, options=clam.OracleOptions)
    register("llm", oracle.llm_oracle, options=oracle.LlmOracleOptions)


@hookimpl
def register_personas(register):
    from . import personas

    for name, factory, help in personas.BUILTIN:
        register(name, factory, help=help, options=[])


@hookimpl
def register_disambiguators(register):
    from .disambiguate import disambig_first, qd, qd_model, rac
    from . import toc
    from .toc import run as toc_run

    register("qd", qd_model.qd_disambiguator, options=qd.QdOptions)
    register("disambig-first", disambig_first.disambig_first_disambiguator, options=disambig_first.DisambigFirstOptions)
    register("rac", rac.rac_disambiguator, options=rac.RacOptions)
    register("toc", toc_run.toc_disambiguator, options=toc.TocOptions)


@hookimpl
def register_formats(register):
    from ..data import benchmarks, formats

    for name, reader in {**formats.QUESTION_FORMATS, **benchmarks.FORMATS, **formats.CORPUS_FORMATS}.items():
        help_ = formats.DESCRIPTIONS.get(name) or benchmarks.DESCRIPTIONS.get(name, "")
        register(name, _format(reader), help=help_, options=[])


def _format(reader):
    def factory(path):
        return reader(path)

    return factory
