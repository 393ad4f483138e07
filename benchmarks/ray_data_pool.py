"""Ray Data's actor pool over a dataset of texts (``map_with_udf`` of ``xlt.inference.PseudoLabelUDF``): the
pseudo-labelling path the jobs do not take (each keeps one pool of ``xlt.inference.labellers.Labellers`` for the
whole job), which ``pseudo_label_throughput.py`` and ``pool_scale.py`` measure beside it."""

from __future__ import annotations

from typing import Any


def pseudo_label(ds: Any, spec: Any, settings: Any = None, *, text_column: str = "text",
                 sort_by_length: bool = True) -> Any:
    """``ds`` with ``pseudo_label``, ``confidence`` (the argmax's softmax probability) and ``probabilities`` per
    row (Yu & Joty 2021, Alg. 1), lazily, through a pool of ``settings.num_actors`` actors that each load ``spec``
    (one classifier or several: then every one's prediction) and take batches of ``settings.batch_size``. Input
    columns pass through; rows come in no guaranteed order (join on an id). ``sort_by_length`` buckets each
    batch by token length (less padding, the same predictions). On 2 CPUs, two actors need ``num_cpus=0.5`` or
    the input's tasks get no slot and the pipeline stalls."""
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
    return map_with_udf(ds, PseudoLabelUDF, dict(spec=spec, settings=settings, sort_by_length=sort_by_length,
                                                 text_column=text_column, num_threads=settings.torch_threads),
                        batch_size=settings.batch_size, num_actors=settings.num_actors, num_cpus=settings.num_cpus,
                        num_gpus=gpus_or_none(settings.num_gpus))
