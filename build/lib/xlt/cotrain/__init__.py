"""Co-training (Yu & Joty 2021, §3.1, Alg. 1): two learners exchanging confident pseudo-labels, each
served by the engine (one Ray Train run for all its fits, or the job's own process)."""

from .config import LEARNERS, CotrainConfig, LearnerConfig, load_cotrain_config
from .learner import Fit, fit, learner_service
from .loop import exchange, prepare, receiver, run_cotraining
from .selection import POLICIES, Selection
from .state import LoopState

__all__ = ["LEARNERS", "CotrainConfig", "LearnerConfig", "Fit", "fit", "learner_service", "LoopState", "POLICIES",
           "Selection", "exchange", "load_cotrain_config", "prepare", "receiver", "run_cotraining"]
