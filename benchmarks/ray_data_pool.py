"""Ray Data's actor pool over a dataset of texts (``map_with_udf`` of ``xlt.inference.PseudoLabelUDF``): the
pseudo-labelling path the jobs do not take (each keeps one pool of ``xlt.inference.labellers.Labellers`` for the
whole job), which ``pseudo_label_throughput.py`` and ``pool_scale.py`` measure beside it."""

from __future__ import annotations

from typing import Any


def pseudo_label(ds: Any, spec: Any,
                 settings: Any = None, *, text_column: str = "text",
                 sort_by_length: bool = True) -> Any:
    """``ds`` with ``pseudo_label``, ``confidence``, ``probabilities`` per row (Yu & Joty 2021, Alg. 1), through Ray
    Data's actor pool: the path the jobs do not take (each keeps one pool of ``Labellers`` for the whole job),
    measured beside it here and in ``pool_scale.py``.

    Implements ``(y_u, c_u) = f_θ(x_u)`` for every x_u of the unlabelled pool: y_u is the
    classifier's argmax label, c_u its softmax probability (our reading of the paper's undefined
    "confidence score"; see the module docstring). Input columns pass through untouched; one
    output row per input row, in no guaranteed order (join on an id column, not on position).

    Lazy and streaming: returns at once, and rows flow through an actor pool of ``settings.num_actors``
    in batches of ``settings.batch_size`` as the caller consumes the result (``iter_batches``,
    ``filter``, ``write_parquet``), so pools larger than memory never exist in full anywhere. Each
    actor loads ``spec`` once; it reserves ``num_cpus`` and ``num_gpus`` (a fraction shares a GPU
    between actors; in a cluster that has no GPU and whose autoscaler cannot add one, none, with a
    warning: ``gpus_or_none``) and runs ``settings.torch_threads`` torch threads. On a 2-CPU machine,
    two actors need ``num_cpus=0.5`` each or the tasks producing the input get no CPU slot and the
    pipeline stalls (see ``xlt.augment.build_augmented_dataset``).

    ``sort_by_length`` buckets each batch's texts by token length (less padding; the same
    predictions). Parallelism needs several input blocks: a single block is processed by one actor.
    ``spec`` may name several classifiers (see ``PseudoLabelUDF``): each row then gets every one's
    prediction.
    """
    from xlt.config import check
    from xlt.data.ray_data import map_with_udf
    from xlt.inference import EXACT, PseudoLabelUDF
    from xlt.inference.pseudo_label import gpus_or_none

    settings = EXACT if settings is None else settings
    check(settings.num_actors >= 1, "inference.num_actors", settings.num_actors,
          "an integer >= 1 for a Ray Data pool (0, the driver, is xlt.inference.labellers')")
    schema = ds.schema(fetch_if_missing=False)  # known without running anything, or None
    if schema is not None and text_column not in schema.names:
        raise KeyError(f"the dataset has no text column {text_column!r}; columns: {list(schema.names)} "
                       "(pass text_column= to name the column holding the texts)")
    return map_with_udf(
        ds, PseudoLabelUDF,
        dict(spec=spec, settings=settings, sort_by_length=sort_by_length, text_column=text_column,
             num_threads=settings.torch_threads),
        batch_size=settings.batch_size, num_actors=settings.num_actors, num_cpus=settings.num_cpus,
        num_gpus=gpus_or_none(settings.num_gpus),
    )


