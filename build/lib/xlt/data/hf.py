"""Hugging Face ``datasets`` -> rows or parallel pairs: hub names, or a dataset saved with ``save_to_disk``.

``load_split`` reads one split; the ``hf`` task type (``xlt.tasks.hf``) turns its rows into examples,
with ``class_label_rows`` making the integer labels of a ``ClassLabel`` column their names, so that
examples from the hub and from files share one label vocabulary. ``datasets`` is imported lazily:
it is slow to import and only this module needs it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xlt.data.records import ParallelPair
from xlt.data.rows import Row, RowSource, check_columns, pairs_from_rows

if TYPE_CHECKING:
    import datasets


def read_hf_parallel(
    name_or_path: str | Path,
    split: str | None = None,
    *,
    src_field: str = "src",
    tgt_field: str = "tgt",
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    src_lang_field: str = "src_lang",
    tgt_lang_field: str = "tgt_lang",
    id_field: str = "id",
    config_name: str | None = None,
) -> list[ParallelPair]:
    """Read one split of a Hugging Face dataset of translation pairs.

    Columns as ``xlt.data.files.read_parallel``; a field may name a key inside a dict column
    with a dot, as the hub's translation datasets store pairs (``{"translation": {"en": ...,
    "de": ...}}``: ``src_field="translation.en"``). Languages are fixed (``src_lang`` /
    ``tgt_lang``) or read per row.

    ``name_or_path`` is a hub name (``"Helsinki-NLP/opus-100"``; needs network or a warm cache)
    or a local directory written by ``save_to_disk``; ``split`` is required except for a saved
    single ``Dataset`` (see ``load_split``); ``config_name`` is the hub configuration (``"de-en"``).
    """
    ds = load_split(name_or_path, split, config_name)
    source = RowSource(f"{name_or_path}[{split}]" if split else str(name_or_path), unit="row")
    fields = [src_field, tgt_field] + [f for f, fixed in ((src_lang_field, src_lang), (tgt_lang_field, tgt_lang))
                                       if fixed is None]
    check_columns(source, None, ds.column_names, [f.split(".")[0] for f in fields])
    rows = ((index, _flatten_fields(row, fields)) for index, row in enumerate(ds.with_format(None)))
    prefix = f"{Path(str(name_or_path)).name}/{split}" if split else Path(str(name_or_path)).name
    return pairs_from_rows(rows, source, src_field=src_field, tgt_field=tgt_field, src_lang=src_lang,
                           tgt_lang=tgt_lang, src_lang_field=src_lang_field, tgt_lang_field=tgt_lang_field,
                           id_field=id_field, id_prefix=prefix)


def _flatten_fields(row: Row, fields: Sequence[str]) -> Row:
    """``row`` plus ``"a.b"`` = ``row["a"]["b"]`` for each dotted field (absent if the path is)."""
    out = dict(row)
    for name in fields:
        if "." not in name or name in row:
            continue
        value: object = row
        for key in name.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            out[name] = value
    return out


def load_split(name_or_path: str | Path, split: str | None, config_name: str | None = None,
               data_files: str | None = None) -> datasets.Dataset:
    """One split of a saved dataset (``save_to_disk``: a ``DatasetDict`` or a single ``Dataset``), or
    of ``datasets.load_dataset(name_or_path, config_name, data_files=...)`` (hub, cache, or a builder
    such as ``json`` over local ``data_files``)."""
    import datasets

    path = Path(name_or_path)
    if (path / "dataset_dict.json").is_file():
        _no_config(path, config_name)
        splits = datasets.load_from_disk(str(path))
        if split is None or split not in splits:
            found = f"no split {split!r}" if split is not None else "split= is required"
            raise ValueError(f"{path}: {found}; splits present: {', '.join(splits)}")
        return splits[split]
    if (path / "state.json").is_file() and (path / "dataset_info.json").is_file():
        _no_config(path, config_name)
        ds = datasets.load_from_disk(str(path))
        saved = str(ds.split) if ds.split is not None else None
        if split is not None and saved is not None and split != saved:
            raise ValueError(f"{path} holds the {saved!r} split, not {split!r}; pass split={saved!r} or None")
        return ds
    if split is None:
        raise ValueError(f"{name_or_path}: pass split= (e.g. 'train') to read a dataset from the hub or data files")
    # A plain data_files string is the builder's "train" split: name it after the split asked for.
    files = {split: data_files} if data_files is not None else None
    return datasets.load_dataset(str(name_or_path), name=config_name, split=split, data_files=files)


def _no_config(path: Path, config_name: str | None) -> None:
    if config_name is not None:
        raise ValueError(f"{path} is a saved dataset; config_name={config_name!r} applies only to hub datasets")


def class_names_of(ds: datasets.Dataset, label_field: str | None) -> list[str] | None:
    import datasets

    feature = ds.features.get(label_field) if label_field else None
    return list(feature.names) if isinstance(feature, datasets.ClassLabel) else None


def class_label_rows(
    ds: datasets.Dataset, label_field: str | None, class_names: list[str] | None, source: RowSource
) -> Iterator[tuple[int, Row]]:
    for index, row in enumerate(ds):
        if class_names is not None and label_field is not None:
            value = row[label_field]
            # -1 is the datasets convention for "no label" (e.g. hidden test labels).
            if not isinstance(value, int) or not 0 <= value < len(class_names):
                raise source.error(
                    index,
                    f"label {value!r} in column {label_field!r} is not a class index 0..{len(class_names) - 1} "
                    f"({', '.join(class_names)}); every row of a labelled split needs one (unlabelled text is read as the task's pool split)",
                )
            row = {**row, label_field: class_names[value]}
        yield index, row
