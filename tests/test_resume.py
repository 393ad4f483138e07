"""Resumability declared on each config field (``xlt.resume``): every field of every job's config
classified, the keys derived from the declarations, and the rules of ``length`` and ``refitted``."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from xlt.cotrain.config import CotrainConfig
from xlt.eval.protocols import EvaluateConfig
from xlt.pretrain.config import PretrainConfig
from xlt.resume import fixed, free, incompatible_changes, length, refitted, resumable_keys, unclassified
from xlt.train.config import FinetuneConfig

RESUMED = (FinetuneConfig, PretrainConfig, CotrainConfig)  # the configs of the jobs that resume a run directory


@pytest.mark.parametrize("config", (*RESUMED, EvaluateConfig), ids=lambda c: c.__name__)
def test_every_field_of_a_resumed_config_is_classified(config):
    """An evaluation resumes nothing, but its directory is named after what its overrides change as a run's is
    (``xlt.config.with_own_output``)."""
    assert unclassified(config) == []


def test_the_derived_keys_are_what_each_job_may_change():
    finetune = resumable_keys(FinetuneConfig)
    assert {"optim.epochs", "optim.eval_batch_size", "optim.encoder_pass_rows", "scaling.threads",
            "scaling.resources", "output.dir", "data.data_dir", "evals"} <= set(finetune)
    assert not {"optim.lr", "optim.seed", "scaling.num_workers", "task", "model", "data.max_examples"} & set(finetune)
    pretrain = resumable_keys(PretrainConfig)
    assert {"optim.epochs", "data.dictionary_dir", "data.annotate_actors", "data.eval_max_pairs", "evals"} <= set(pretrain)
    assert "data.sources" not in pretrain and "recipe" not in pretrain
    cotrain = resumable_keys(CotrainConfig)
    # A learner's fits are refitted every iteration: its epochs are fixed, how it runs is not.
    assert {"iterations", "probes", "lm.optim.eval_batch_size", "emb.optim.encoder_pass_rows",
            "lm.scaling.resources", "inference.batch_size", "output.dir"} <= set(cotrain)
    assert not {"lm.optim.epochs", "emb.optim.lr", "lm.scaling.num_workers", "inference.precision",
                "selection", "data.max_examples"} & set(cotrain)


@dataclass(frozen=True)
class Inner:
    steps: int = length(3)
    rate: float = fixed(0.1)
    threads: int = free(0)


@dataclass(frozen=True)
class Outer:
    run: Inner = Inner()
    fits: Inner = refitted(factory=Inner)
    whole: Inner = free(factory=Inner)
    loose: int = 0


def test_length_is_fixed_inside_a_refitted_section_and_an_undeclared_field_is_named():
    assert resumable_keys(Outer) == ("run.steps", "run.threads", "fits.threads", "whole")
    assert unclassified(Outer) == ["loose"]
    assert incompatible_changes(Outer(), Outer(run=Inner(steps=5), whole=Inner(rate=1.0))) == []
    assert incompatible_changes(Outer(), Outer(fits=Inner(steps=5), loose=1)) == ["fits.steps", "loose"]

