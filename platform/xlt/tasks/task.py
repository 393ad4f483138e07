"""``Task``: a resolved ``TaskConfig`` and its rows — what every job trains, pseudo-labels and evaluates.

``load_task(cfg, data_dir)`` runs on the driver before Ray starts or a model loads: it finds the
task's languages, checks the configured ones are there, reads the source language's train split
(its labels fix the label set when ``labels`` is empty) and returns a ``Task`` whose config names
every language and label explicitly, so the ``config.yaml`` saved beside a run records exactly
what ran. Splits are read on first use and kept; ``Task.check`` reads every split a job will use,
so that a bad row anywhere is reported before any work starts.

Rows handed to Ray are plain dicts (``row``): ``id, text, text_pair, label, lang, source_id``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..config import ConfigError
from ..data.records import Example
from ..data.sample import sample
from .config import TaskConfig
from .registry import task_type

ROW_COLUMNS: tuple[str, ...] = ("id", "text", "text_pair", "label", "lang", "source_id")


def row(example: Example) -> dict[str, Any]:
    """An example as the row dict Ray datasets and the training batches read."""
    return {"id": example.id, "text": example.text, "text_pair": example.text_pair, "label": example.label,
            "lang": example.lang, "source_id": example.source_id}


class Task:
    """A resolved task: ``config`` (languages and labels explicit) and its examples by role and language."""

    def __init__(self, config: TaskConfig, data_dir: Path | None, found: dict[str, str]) -> None:
        self.config, self.data_dir, self.found = config, data_dir, found
        self._type = task_type(config)
        self._cache: dict[tuple[str, str], list[Example]] = {}
        # Rows left out for a label outside ``labels`` (``unknown_labels: drop``), by ``<split>/<lang>``; pool
        # rows that lost their gold label count as ``pool/<lang>``.
        self.dropped: dict[str, int] = {}

    @property
    def labels(self) -> tuple[str, ...]:
        return self.config.labels

    @property
    def source_lang(self) -> str:
        return self.config.source_lang

    @property
    def target_langs(self) -> tuple[str, ...]:
        return self.config.target_langs

    @property
    def langs(self) -> tuple[str, ...]:
        return self.config.langs

    @property
    def paired(self) -> bool:
        return self.config.paired

    def examples(self, role: str, lang: str, limit: int = 0, *, keep: bool = True) -> list[Example]:
        """The examples of ``role``'s split in ``lang``: all, or a draw of at most ``limit`` (``draw``).
        ``pool`` examples keep a label only where the data has one (gold, for scoring). A split is
        read once and kept, unless ``keep=False`` (a pool too large to hold: read it when needed)."""
        key = (role, lang)
        if key in self._cache:
            return self.draw(role, self._cache[key], limit)
        examples = self._type.read(self.config, self.data_dir, role, lang, self.labels or None, self.found,
                                   self.dropped)
        if keep:
            self._cache[key] = examples
        return self.draw(role, examples, limit)

    def draw(self, role: str, examples: list[Example], limit: int) -> list[Example]:
        """At most ``limit`` of ``examples`` (0 = all), drawn at random with ``task.sample_seed``
        (``xlt.data.sample``): keyed by the translation link where the task has one, so that every
        language's draw holds the same sentences where the data has them, and stratified by label,
        except in the pool, whose labels are gold kept for scoring only: an unlabelled corpus could
        not be drawn by them."""
        return sample(examples, limit, key=lambda ex: ex.source_id if ex.source_id is not None else ex.id,
                      label=None if role == "pool" else (lambda ex: ex.label), seed=self.config.sample_seed)

    def pool(self, lang: str, limit: int = 0, *, disjoint: bool = False, keep: bool = True) -> list[Example]:
        """``lang``'s unlabelled pool: ``examples("pool", ...)``; ``disjoint``: without the translations of the
        source language's train draw of the same ``limit`` (what a job learns its labels from), drawn after they
        are left out, so that a pool holds none of the sentences the labelled rows translate. Needs a ``link``."""
        if not disjoint:
            return self.examples("pool", lang, limit, keep=keep)
        if self.config.link == "none":
            raise ConfigError(f"task {self.config.name!r} has no translations, so no pool disjoint from them: set "
                              "task.link (id, line or source_id), or data.pool: task")
        taught = {ex.source_id for ex in self.examples("train", self.source_lang, limit)}
        return self.draw("pool", [ex for ex in self.examples("pool", lang, keep=keep) if ex.source_id not in taught],
                         limit)

    def rows(self, role: str, langs: Iterable[str], limit: int = 0) -> list[dict[str, Any]]:
        """``examples`` of every language in ``langs`` as row dicts, language by language."""
        return [row(ex) for lang in langs for ex in self.examples(role, lang, limit)]

    def translations(self, role: str, lang: str, of: Iterable[Example]) -> dict[str, Example]:
        """The ``lang`` rows of ``role``'s split linked (``link``) to the examples ``of``, keyed by the
        example's id; examples without a translation are absent. Needs a ``link``."""
        if self.config.link == "none":
            raise ConfigError(f"task {self.config.name!r} has no translations: set task.link (id, line or "
                              "source_id) to say how rows of different languages are linked")
        by_link = {ex.source_id: ex for ex in self.examples(role, lang)}
        return {ex.id: by_link[ex.source_id] for ex in of if ex.source_id in by_link}

    def check(self, roles: dict[str, Iterable[str]]) -> None:
        """Read every ``role: languages`` now, so that bad input fails before any work starts."""
        for role, langs in roles.items():
            for lang in langs:
                self.examples(role, lang)


def load_task(cfg: TaskConfig, data_dir: str | Path | None = None) -> Task:
    """Resolve ``cfg`` (see the module docstring): target languages and labels made explicit."""
    root = Path(data_dir) if data_dir else None
    kind = task_type(cfg)
    found = kind.found(cfg, root)
    targets = cfg.target_langs or tuple(sorted(lang for lang in found if lang != cfg.source_lang))
    missing = [lang for lang in (cfg.source_lang, *targets) if lang not in found]
    if missing:
        where = cfg.path if cfg.type == "files" else f"{cfg.type} dataset {cfg.path}"
        raise ConfigError(f"task {cfg.name!r}: no data for {', '.join(missing)} under {where}; languages found: "
                          f"{', '.join(sorted(found)) or 'none'} (map a folder name to a code with task.languages)")
    if not targets:
        raise ConfigError(f"task {cfg.name!r}: no target language: only the source language {cfg.source_lang!r} "
                          "was found; the transfer metrics need at least one target (task.target_langs)")
    task = Task(dataclasses.replace(cfg, target_langs=targets), root, found)
    if not cfg.labels:
        train = task.examples("train", cfg.source_lang)
        labels = tuple(sorted({ex.label for ex in train if ex.label is not None}))
        if len(labels) < 2:
            raise ConfigError(f"task {cfg.name!r}: the source train split has {len(labels)} distinct label(s) "
                              f"{list(labels)}; a classifier needs at least two (task.labels lists them)")
        # The train split read here defines the label set, so it needs no second reading; every
        # split read from now on is checked against these labels.
        task.config = dataclasses.replace(task.config, labels=labels)
    return task
