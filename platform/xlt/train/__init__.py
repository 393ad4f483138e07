"""Fine-tuning on Ray Train: encoder + head, CE + Σ λ_k·aux_k, per-language evaluation, checkpoints.

- ``config``: ``FinetuneConfig`` (frozen, validated) and ``load_finetune_config``
- ``batches``: rows with their views -> one flat batch (``group`` / ``is_anchor`` / ``labels``)
- ``data``: a task's train rows of a setting (zero-shot, translate-train, translation views)
- ``loop``: the step, the evaluation and ``train_loop_per_worker``
- ``reporting``: the one module that calls ``ray.train.report`` and reads/writes checkpoints
- ``trainer``: ``build_trainer`` / ``resume_trainer`` -> ``TorchTrainer``; results table rows
"""

from .batches import ViewBatch, flatten_batch
from .config import FinetuneConfig, load_finetune_config
from .loop import build_training, evaluate, train_loop_per_worker, train_step
from .reporting import load_classifier, read_checkpoint
from .trainer import build_trainer, config_of, resolve, results_path, results_rows, resume_config, resume_trainer, run_dir

__all__ = ["ViewBatch", "flatten_batch", "FinetuneConfig", "load_finetune_config", "build_training", "evaluate",
           "train_loop_per_worker", "train_step", "load_classifier", "read_checkpoint", "build_trainer", "config_of", "resolve",
           "results_path", "results_rows", "resume_config", "resume_trainer", "run_dir"]
