"""How ``jobs/predict.py`` ends: its labels by language and its phases, ``results.json``, ``config.yaml`` and its
record in ``output.dir`` (local or on a store) beside the shards."""

from __future__ import annotations

from ..config import save_config
from ..record import FINISHED, write_record
from ..report import Finished, Phases, markdown_table, write_results
from ..storage import join, staged
from . import PreparedPredict
from .writer import PREDICTIONS, Written


def finish_prediction(prepared: PreparedPredict, written: Written, phases: Phases) -> Finished:
    """A prediction's table of labels by language (module docstring)."""
    cfg = prepared.config
    langs = sorted({lang for lang, _ in written.labels})
    table = [{"lang": lang, "rows": sum(n for (l, _), n in written.labels.items() if l == lang),
              **{label: written.labels.get((lang, label), 0) for label in prepared.spec.labels}} for lang in langs]
    text = (f"## {written.rows} rows labelled by {prepared.checkpoint}"
            + (f" ({written.skipped} shard(s) kept from an earlier run)" if written.skipped else "")
            + (f"; {written.rejected} bad row(s) skipped: predictions/shard-*/_rejected.jsonl" if written.rejected else "")
            + f"\n\n{markdown_table(table)}\n\n### Where the time went\n\n{phases.table()}")
    with staged(cfg.output.dir) as out:
        save_config(cfg, out / "config.yaml")
        write_results(out / "results.json", {"model": prepared.checkpoint, "rows": written.rows,
                                             "rejected": written.rejected, "by_language": table,
                                             "phases": phases.rows(),
                                             "format": cfg.format, "precision": cfg.inference.precision})
    outputs = {"predictions": join(cfg.output.dir, PREDICTIONS, f"shard-*/ ({cfg.format})"),
               "results": join(cfg.output.dir, "results.json")}
    write_record(cfg.output.dir, "predict", cfg, FINISHED, outputs=outputs,
                 metrics={"rows": written.rows, "rejected": written.rejected})
    return Finished(text, outputs)
