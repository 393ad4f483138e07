"""``PretrainConfig`` -> the engine's ``Run``: the training set on the driver, resume, the exported encoder.

``prepare(cfg)`` reads and mixes the parallel data (``parallel.build_mixture``), annotates it
with the dictionary information its recipe needs (``batches.PairAnnotator`` on a Ray Data actor
pool, pairs without a word-positioned sample dropped when the recipe needs one), materialises
it and resolves the config (absolute paths, ``data.train_rows``). ``build_trainer`` hands the
datasets — ``train`` split across the workers, ``tatoeba`` (the held-apart evaluation pairs)
whole — to ``xlt.engine.launch`` with the ``PRETRAIN`` workload, which also saves ``config.yaml`` in the run
directory and refuses to continue a run directory whose saved config trains something else.

Resuming works as for fine-tuning (Ray Train V2 finds the run's checkpoints in ``output.dir``): running the same config again resumes it, and
``build_trainer(resume_config(run_dir))`` continues it from its saved ``config.yaml``.

Every checkpoint directory holds ``encoder/``, a ``local:`` model: ``encoder_dir(checkpoint)``
is what ``jobs/finetune.py --set model.source=local:<dir>`` (and co-training's learners) load.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..config import ConfigError
from ..data import as_rows, resolve_data_dir
from ..data.ray_data import map_with_udf
from ..engine import Run, absolute_storage, check_device, launch
from ..engine import resume_config as resume_run_config
from ..storage import join
from .batches import PairAnnotator, keep_row, needs_dictionary
from .config import HELD_APART, PretrainConfig
from .workload import ENCODER_DIR, PRETRAIN
from .parallel import Mixture, build_mixture, evaluation_rows, load_dictionaries

if TYPE_CHECKING:
    import ray.data
    
ANNOTATE_BATCH = 256  # pairs per annotation batch


@dataclass(frozen=True)
class PreparedPretrain:
    """A resolved config, its Ray datasets and how the training pairs were mixed."""

    config: PretrainConfig
    datasets: dict[str, ray.data.Dataset]
    mixture: Mixture


def english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list (Chen et al. 2022, §2.1, remove stop words from their dictionary)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def prepare(cfg: PretrainConfig) -> PreparedPretrain:
    """Read, mix and annotate the training pairs; resolve the config (see the module docstring).

    Needs Ray (the annotation runs as a Ray Data actor pool, or in this process: ``data.annotate_actors``).
    """
    import ray.data

    check_device(cfg.optim, cfg.scaling)
    ray.data.DataContext.get_current().enable_progress_bars = False
    root = resolve_data_dir(cfg.data.data_dir)
    try:
        mixture = build_mixture(cfg.data, root, cfg.optim.seed)
    except (ValueError, FileNotFoundError) as e:
        raise ConfigError(f"data: {e}") from e
    ds = ray.data.from_items(as_rows(mixture.pairs))
    features = cfg.batch.features or "pooled"
    dictionary_dir = Path(cfg.data.dictionary_dir or root / "muse").resolve()
    if needs_dictionary(cfg.requires, features):
        directions = {(p.src_lang, p.tgt_lang) for p in mixture.pairs}
        try:
            dictionaries = load_dictionaries(dictionary_dir, directions)
        except FileNotFoundError as e:
            raise ConfigError(f"data.dictionary_dir: {e}") from e
        annotator = dict(model=cfg.model, requires=cfg.requires, features=features, dictionaries=dictionaries,
                         stop_words=english_stop_words() if cfg.data.english_stop_words else frozenset(),
                         subword=cfg.batch.subword, max_span_words=cfg.batch.max_span_words, seed=cfg.optim.seed)
        ds = map_with_udf(ds, PairAnnotator, annotator, batch_size=ANNOTATE_BATCH, num_actors=cfg.data.annotate_actors,
                          num_cpus=cfg.data.annotate_cpus, num_gpus=0.0).filter(keep_row)
    ds = ds.materialize()
    rows = ds.count()
    if rows == 0:
        raise ConfigError(f"none of the {len(mixture.pairs)} training pairs has a word-positioned sample under the "
                          f"dictionaries of {dictionary_dir}: batch.features=cce needs a translated word pair per pair")
    data = dataclasses.replace(cfg.data, data_dir=str(root), dictionary_dir=str(dictionary_dir), train_rows=rows)
    cfg = dataclasses.replace(cfg, data=data, output=absolute_storage(cfg.output))
    datasets = {"train": ds}
    if cfg.data.eval_langs:
        datasets[HELD_APART] = ray.data.from_items(evaluation_rows(cfg.data, root))
    return PreparedPretrain(cfg, datasets, mixture)


def build_trainer(cfg: PretrainConfig | PreparedPretrain, callbacks: Sequence[Any] = ()) -> Run:
    """The run of ``cfg`` (prepared here unless already); a run directory that already
    holds checkpoints of the same config is resumed. ``callbacks``: Ray Train ``UserCallback``s
    (experiment tracking)."""
    prepared = cfg if isinstance(cfg, PreparedPretrain) else prepare(cfg)
    prepared.config.steps_per_epoch(prepared.config.scaling.num_workers)  # too few pairs fail here, not on workers
    return launch(PRETRAIN, prepared.config, prepared.datasets, callbacks=callbacks)



def resume_config(directory: str, overrides: Iterable[str] = ()) -> PretrainConfig:
    """The saved config of pretraining run ``directory`` with ``--set``-style ``overrides``."""
    return resume_run_config(directory, overrides, PretrainConfig)


def encoder_dir(checkpoint: str | Path) -> str:
    """The ``local:`` encoder directory inside a pretraining checkpoint (a local path or a URI)."""
    return join(checkpoint, ENCODER_DIR)
