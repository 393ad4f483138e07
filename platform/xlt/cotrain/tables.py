"""Tables and the plot of a co-training run, from its ``LoopState.history``.

- per iteration: each learner's train rows, evaluation (source, average over targets) and what
  it selected (candidates, selected, pseudo-label accuracy);
- per language: each learner alone (iteration 0) and at the last iteration;
- a plot of average target accuracy per iteration and learner (Yu & Joty 2021, Fig. 3 analogue).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..metrics import ACC, AVG_TARGET, metric_name
from .classifier import CLASSIFIER


def iteration_rows(history: Sequence[Mapping[str, Any]], split: str, source_lang: str) -> list[dict[str, Any]]:
    def count(value: float | None) -> int | None:
        return None if value is None else int(value)

    # The accuracy of no selected rows is undefined (NaN in the history): a dash, not "nan".
    return [{"iteration": h["iteration"], "learner": h["learner"], "train rows": count(h.get("train/rows")),
             f"{source_lang} dev": h.get(metric_name("val", ACC, source_lang)),
             source_lang: h.get(metric_name(split, ACC, source_lang)),
             AVG_TARGET: h.get(metric_name(split, ACC, AVG_TARGET)),
             "candidates": count(h.get("pseudo/candidates")), "selected": count(h.get("pseudo/selected")),
             "pseudo acc": h.get("pseudo/accuracy") if h.get("pseudo/selected") else None} for h in history]


def language_rows(history: Sequence[Mapping[str, Any]], split: str, langs: Sequence[str],
                  label: str, score: str = ACC, kept: int | None = None) -> list[dict[str, Any]]:
    """One row per (learner, first / last iteration), and the job's classifier at iteration ``kept``
    first: ``score`` (accuracy or macro-F1) per language and the target average."""
    last = max(h["iteration"] for h in history)

    def row(name: str, h: Mapping[str, Any]) -> dict[str, Any]:
        return {"model": name, **{lang: h.get(metric_name(split, score, lang)) for lang in (*langs, AVG_TARGET)}}

    rows = []
    if kept is not None:
        h = next(h for h in history if h["learner"] == CLASSIFIER and h["iteration"] == kept)
        rows.append(row(f"**the job's classifier** ({h.get('combines', CLASSIFIER)}, iteration {kept})", h))
    for h in history:
        # the job's classifier at the first and last iteration only where it combines learners (else it is one)
        if h["iteration"] not in (0, last) or (h["learner"] == CLASSIFIER and " × " not in h.get("combines", "")):
            continue
        who = h.get("combines", h["learner"])  # the job's classifier by the learners it combines
        name = f"{who} alone" if h["iteration"] == 0 else f"{who} {label} (iteration {last})"
        rows.append(row(name, h))
    return rows


def plot_iterations(history: Sequence[Mapping[str, Any]], split: str, path: str | Path, title: str) -> Path:
    """Average target accuracy against iteration, one line per learner; written to ``path`` (PNG)."""
    from ..report.plots import new_figure, save_figure

    fig, ax = new_figure()
    for learner in dict.fromkeys(h["learner"] for h in history):
        points = [(h["iteration"], h[metric_name(split, ACC, AVG_TARGET)]) for h in history if h["learner"] == learner]
        ax.plot(*zip(*points), marker="o", label=learner)
    ax.set_xticks(sorted({h["iteration"] for h in history}))  # iterations are whole numbers
    return save_figure(fig, ax, path, xlabel="iteration", ylabel=f"{split} accuracy, average over targets",
                       title=title)
