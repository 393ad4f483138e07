"""The one training engine: every job that trains (fine-tuning, alignment pretraining, co-training
learners, sweep trials) plugs a ``Workload`` (model, batcher, step, evaluation) into it.

- ``settings``: ``OptimSettings`` (AdamW + schedule, accumulation), ``ScalingSettings``,
  ``steps_per_epoch``; which config changes a resumed run may make
- ``training``: ``Training`` (module, step module, optimiser, schedule, counters), ``build_training``,
  ``accumulation_step`` (DDP ``no_sync`` on all but the last micro-batch), epoch statistics
- ``loop``: ``Workload``, ``run_epoch`` and the per-worker loop ``train_loop_per_worker``
- ``checkpoints``: what a checkpoint holds; the one module that reports and reads them
- ``session``: the run a train function is in: Ray Train's worker, or an ``InProcessTrainer``'s run in
  this process (``scaling.num_workers: 0``), which persists checkpoints into the run directory itself
- ``runs``: run directories (local paths or URIs), resuming, ``TorchTrainer`` construction
- ``fits``: ``FitService``, one run whose worker group serves many fits (co-training's learners)
"""

from .fits import FitOutcome, FitService
from .loop import Workload, collect, eval_rows_of, run_epoch, start_training, train_loop_per_worker
from .checkpoints import final_metrics, read_state, write_state
from .runs import (RESULTS_FILE, absolute_storage, check_resumable, read_run_config, resume_config, run_dir,
                   torch_trainer)
from .settings import (RESUMABLE_CHANGES, OptimSettings, ScalingSettings, changed_keys, check_device,
                       incompatible_changes, resolve_auto, steps_per_epoch)
from .training import (EpochStats, Training, TrainState, accumulation_step, build_training, epoch_metrics, epoch_seed, grouped,
                       param_groups)

__all__ = ["FitOutcome", "FitService", "Workload", "collect", "eval_rows_of", "run_epoch", "start_training", "train_loop_per_worker", "TrainState",
           "final_metrics", "read_state", "write_state", "RESULTS_FILE", "absolute_storage", "check_resumable", "read_run_config",
           "resume_config", "run_dir", "torch_trainer", "RESUMABLE_CHANGES", "OptimSettings",
           "ScalingSettings", "changed_keys", "check_device", "incompatible_changes", "resolve_auto", "steps_per_epoch",
           "EpochStats", "Training", "accumulation_step", "build_training", "epoch_metrics", "epoch_seed", "grouped",
           "param_groups"]
