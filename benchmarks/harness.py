"""What the benchmark scripts share: their arguments, the machine a measurement ran on, the header of its result
with the command that made it, and writing it. The scripts import it as ``harness`` (``benchmarks/`` is a folder of
scripts, each run with its own folder first on the path; tests load them with ``tests/benchmarks/loading.py``)."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from xlt.hardware import cpu_model
from xlt.report import command_line

REPO = Path(__file__).resolve().parents[1]
HERE = REPO / "benchmarks"


def parser(doc: str, out: str | None = None, *, data_dir: bool = False) -> argparse.ArgumentParser:
    """A script's arguments: its docstring as the help; ``--out`` (default ``benchmarks/<out>``) where it writes its
    result; ``--data-dir``, the offline data root (default: ``$XLT_DATA_DIR``)."""
    arguments = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if out is not None:
        arguments.add_argument("--out", type=Path, default=HERE / out, help=f"the result (default: benchmarks/{out})")
    if data_dir:
        arguments.add_argument("--data-dir", help="the offline data root (default: $XLT_DATA_DIR)")
    return arguments


class Machine:
    """Where and when a measurement ran, from when it is made: the CPU and its cores, the date, and the 1-minute
    load average at the start and (when asked) at the end, which every result states beside its figures."""

    def __init__(self) -> None:
        self.started, self.load = time.time(), os.getloadavg()[0]
        self.date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())

    def line(self) -> str:
        import torch

        return (f"{cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__} on {torch.get_num_threads()} "
                f"threads; 1-minute load average {self.load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
                f"{(time.time() - self.started) / 60:.1f} minutes")

    def header(self, title: str) -> str:
        """A markdown result's opening: its title, the command that made it, the date and the machine."""
        return f"# {title}\n\nCommand: `{command_line()}`  \nDate: {self.date}. Machine: {self.line()}.\n"

    def fields(self) -> dict[str, Any]:
        """The same for a JSON result."""
        return {"command": command_line(), "date": self.date, "machine": self.line()}


def write(path: str | Path, result: str | dict[str, Any]) -> Path:
    """Write a result (markdown text, or a JSON-able mapping) to ``path`` and say where."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result if isinstance(result, str) else json.dumps(result, indent=2, default=str) + "\n",
                    encoding="utf-8")
    print(f"wrote {path}")
    return path


def train_step(training: Any, batch: Any, max_grad_norm: float = 1.0) -> dict[str, float]:
    """One optimizer step of a fine-tuning ``training`` (``xlt.train.workload.finetune_training``) on one ``batch``
    (``xlt.train.ViewBatch``), as the engine's loop takes it; ``{"loss": total, "ce": ..., <objective>: ...}``."""
    from xlt.engine import accumulation_step
    from xlt.train.workload import FINETUNE

    return accumulation_step(training, lambda model, b: FINETUNE.loss(training, model, b), [batch], max_grad_norm)
