"""Fine-tuning on the engine: encoder + head, CE + Σ λ_k·aux_k, per-language evaluation, checkpoints.

- ``config``: ``FinetuneConfig`` (frozen, validated) and ``load_finetune_config``
- ``batches``: rows with their views -> one flat batch (``group`` / ``is_anchor`` / ``labels``)
- ``data``: a task's train rows of a setting (zero-shot, translate-train, translation views)
- ``workload``: the ``FINETUNE`` workload (model, batcher, step, evaluation) for ``xlt.engine``
- ``checkpoint``: a fine-tuning checkpoint as a classifier
- ``trainer``: ``build_trainer`` -> the engine's ``Run``; ``resume_config``; results table rows
- ``finish``: how ``jobs/finetune.py`` ends
"""

from .batches import ViewBatch, flatten_batch
from .checkpoint import load_classifier, read_checkpoint
from .config import FinetuneConfig, load_finetune_config
from .workload import FINETUNE, finetune_training
from .trainer import build_trainer, needs_ray, prepare, results_rows, resume_config

__all__ = ["ViewBatch", "flatten_batch", "load_classifier", "read_checkpoint", "FinetuneConfig", "load_finetune_config",
           "FINETUNE", "finetune_training", "build_trainer", "needs_ray", "prepare",
           "results_rows", "resume_config"]
