"""How ``jobs/predict.py`` ends: its labels by language and its phases, ``results.json``, ``config.yaml`` and its
record in ``output.dir`` (local or on a store) beside the shards."""

from __future__ import annotations

from ..config import save_config
from ..record import FINISHED, write_record
from ..report import Finished, Phases, dropped_rows, markdown_table, write_results
from ..storage import join, staged
from . import PreparedPredict
from .centring import MEANS_FILE
from .writer import PREDICTIONS, Written


def finish_prediction(prepared: PreparedPredict, written: Written, phases: Phases) -> Finished:
    """A prediction's table of labels by language (module docstring)."""
    cfg = prepared.config
    langs = sorted({lang for lang, _ in written.labels})
    table = [{"lang": lang, "rows": sum(n for (l, _), n in written.labels.items() if l == lang),
              **{label: written.labels.get((lang, label), 0) for label in prepared.spec.labels}} for lang in langs]
    dropped = dict(prepared.input.task.dropped) if prepared.input.task is not None else {}
    notes = [line for line in (centred_on_input(written), dropped_rows(dropped)) if line]
    backend = "" if cfg.model.backend == "torch" else f" on {cfg.model.backend} (onnxruntime)"
    text = (f"## {written.rows} rows labelled by {prepared.checkpoint}{backend}"
            + (f" ({written.skipped} shard(s) kept from an earlier run)" if written.skipped else "")
            + (f"; {written.rejected} bad row(s) skipped: predictions/shard-*/_rejected.jsonl" if written.rejected else "")
            + "".join(f"\n\n{line}" for line in notes)
            + f"\n\n{markdown_table(table)}\n\n### Where the time went\n\n{phases.table()}")
    with staged(cfg.output.dir) as out:
        save_config(cfg, out / "config.yaml")
        write_results(out / "results.json", {"model": prepared.checkpoint, "rows": written.rows,
                                             "rejected": written.rejected, "by_language": table,
                                             "centred on the input": written.centred, "dropped rows": dropped,
                                             "phases": phases.rows(),
                                             "format": cfg.format, "backend": cfg.model.backend,
                                             "precision": cfg.inference.precision})
    outputs = {"predictions": join(cfg.output.dir, PREDICTIONS, f"shard-*/ ({cfg.format})"),
               "results": join(cfg.output.dir, "results.json"),
               **({"input means": join(cfg.output.dir, MEANS_FILE)} if written.centred else {})}
    write_record(cfg.output.dir, "predict", cfg, FINISHED, outputs=outputs,
                 metrics={"rows": written.rows, "rejected": written.rejected})
    return Finished(text, outputs)


def centred_on_input(written: Written) -> str:
    """The ending's line on the languages centred on their rows in the input (``xlt.predict.centring``)."""
    if not written.centred:
        return ""
    counts = ", ".join(f"{lang} ({n} rows)" for lang, n in written.centred.items())
    return (f"Centred on their rows in the input (inference.new_languages: centre-on-input): {counts}"
            + (f"; the means an earlier run wrote to {MEANS_FILE}." if written.centred_reused else f"; means in {MEANS_FILE}."))
