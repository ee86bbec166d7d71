"""``cq train``: fine-tuning cq's trainable models on CPU (or a GPU), reproducibly (a seed and a step
budget give the same weights). One loop (:mod:`.loop`) serves the ambiguity classifier
(:mod:`.detector`), the CQ generator (:mod:`.cq_generator`) and the span reader (:mod:`.span_reader`);
:mod:`.combiner` fits the combined detector's logistic model. Each writes a model directory with a
``cq_train.json`` report that the matching stage loads."""
from .combiner import CombinerConfig, train_combiner  # noqa: F401
from .cq_generator import train_gen_cq  # noqa: F401
from .detector import train_detect  # noqa: F401
from .loop import DetectTrainConfig, GenCQTrainConfig, TrainConfig, keep_model_inputs  # noqa: F401
from .span_reader import ReaderTrainConfig, train_reader  # noqa: F401
