"""The one training engine: every job that trains (fine-tuning, alignment pretraining, co-training
learners, sweep trials) plugs a ``Workload`` (model, batcher, step, evaluation) into it.

- ``settings``: ``OptimSettings`` (AdamW + schedule, accumulation), ``ScalingSettings``, ``steps_per_epoch``
- ``training``: ``Training`` (module, step module, optimiser, schedule, counters), ``build_training``, epoch
  statistics
- ``loop``: ``Workload``, the train function ``train_workload``, its epochs (``train_epochs``, ``run_epoch``) and
  the step (``accumulation_step``: DDP ``no_sync`` on all but the last micro-batch)
- ``ahead``: the step's input prepared ahead of it in a thread of its own (``optim.input_ahead``)
- ``rows``: rows an in-process run holds, batched as Ray Data batches them
- ``checkpoints``: what a checkpoint holds; the one module that reports and reads them
- ``context``: the run a train function is in, handed to it: a Ray Train worker's, or an in-process
  run's (``scaling.num_workers: 0``), which persists checkpoints into the run directory itself
- ``runs``: run directories (local paths or URIs), resuming, ``launch``: the one way to run a train function
- ``fits``: ``FitService``, one run whose worker group serves many fits (co-training's learners)
"""

from .fits import FitOutcome, FitService
from .loop import Evaluation, EvalRows, Workload, accumulation_step, grouped, run_epoch, start_training, train_workload
from .checkpoints import final_metrics, read_state, write_state
from .runs import (RESULTS_FILE, Run, absolute_storage, check_resumable, read_run_config, resume_config, run_dir,
                   launch)
from .settings import OptimSettings, ScalingSettings, check_device, resolve_auto, steps_per_epoch
from .training import (EpochStats, Training, TrainState, build_training, epoch_metrics, epoch_seed,
                       param_groups)

__all__ = ["FitOutcome", "FitService", "Evaluation", "EvalRows", "Workload", "run_epoch", "start_training", "train_workload", "TrainState",
           "final_metrics", "read_state", "write_state", "RESULTS_FILE", "Run", "absolute_storage", "check_resumable", "read_run_config",
           "resume_config", "run_dir", "launch", "OptimSettings",
           "ScalingSettings", "check_device", "resolve_auto", "steps_per_epoch",
           "EpochStats", "Training", "accumulation_step", "build_training", "epoch_metrics", "epoch_seed", "grouped",
           "param_groups"]
