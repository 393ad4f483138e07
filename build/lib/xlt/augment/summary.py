"""What was made, what is missing: ``summarize_views`` totals the views of an augmented dataset per kind and
language, and says why views are missing (reading 5 of ``xlt.augment``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from xlt.augment.config import VIEW_KINDS

if TYPE_CHECKING:
    import ray.data

_MISSING_REASON = {
    "full": "the translator has no translation of the text (ProvidedTranslations: no row with its source_id "
            "in that language; DictionaryTranslator: no dictionary word in it)",
    "partial": "the translator has no translation of the chosen span or side (DictionaryTranslator: no "
               "dictionary word in it)",
    "codeswitch": "no word of the text has a (non-identity) translation in the dictionary",
}


@dataclass
class ViewSummary:
    """Views made and missing per (kind, language); ``str()`` is a table a user can read."""

    rows: int = 0
    made: Counter[tuple[str, str]] = field(default_factory=Counter)
    missing: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, kinds: Iterable[str], langs: Iterable[str], missing: Iterable[str]) -> None:
        self.rows += 1
        self.made.update(zip(kinds, langs))
        self.missing.update(tuple(entry.split(":", 1)) for entry in missing)

    @property
    def complete(self) -> bool:
        """True when every requested view was made."""
        return not self.missing

    def __str__(self) -> str:
        keys = sorted(set(self.made) | set(self.missing), key=lambda k: (VIEW_KINDS.index(k[0]), k[1]))
        lines = [f"{self.rows} examples, {sum(self.made.values())} views made, "
                 f"{sum(self.missing.values())} missing",
                 "| kind | lang | made | missing |", "|---|---|---:|---:|"]
        lines += [f"| {kind} | {lang} | {self.made[kind, lang]} | {self.missing[kind, lang]} |" for kind, lang in keys]
        for kind, lang in keys:
            if self.missing[kind, lang]:
                requested = self.made[kind, lang] + self.missing[kind, lang]
                lines.append(f"{kind}:{lang}: {self.missing[kind, lang]} of {requested} views missing: "
                             f"{_MISSING_REASON[kind]}")
        return "\n".join(lines)


def summarize_views(data: ray.data.Dataset | dict[str, np.ndarray] | Iterable[Mapping[str, Any]]) -> ViewSummary:
    """Totals of ``view_kinds`` / ``view_langs`` / ``view_missing`` over an augmented dataset
    (consumes it: executes the pipeline), a numpy-dict batch, or an iterable of rows."""
    import ray.data

    report = ViewSummary()
    columns = ["view_kinds", "view_langs", "view_missing"]
    if isinstance(data, ray.data.Dataset):
        # not select_columns: its extra task needs a free CPU slot, which a busy cluster may not have
        for batch in data.iter_batches(batch_format="pyarrow"):
            for kinds, langs, missing in zip(*(batch.column(c).to_pylist() for c in columns)):
                report.add(kinds, langs, missing)
    elif isinstance(data, dict):
        for kinds, langs, missing in zip(*(data[c] for c in columns)):
            report.add(kinds, langs, missing)
    else:
        for row in data:
            report.add(row["view_kinds"], row["view_langs"], row["view_missing"])
    return report
