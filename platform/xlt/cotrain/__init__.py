"""Co-training (Yu & Joty 2021, §3.1, Alg. 1): two learners, each a Ray Train run serving a fit per iteration,
exchanging confident pseudo-labels."""

from .config import LEARNERS, CotrainConfig, LearnerConfig, load_cotrain_config
from .learner import Fit, fit, learner_service
from .loop import exchange, load_data, receiver, run_cotraining
from .selection import POLICIES, Selection
from .state import LoopState

__all__ = ["LEARNERS", "CotrainConfig", "LearnerConfig", "Fit", "fit", "learner_service", "LoopState", "POLICIES",
           "Selection", "exchange", "load_cotrain_config", "load_data", "receiver", "run_cotraining"]
