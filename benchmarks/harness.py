"""What the benchmark scripts share: their arguments and data, the machine a measurement ran on, the header of its
result with the command that made it, writing it, and the clocks and memory of what they measure. The scripts
import it as ``harness`` (``benchmarks/`` is a folder of scripts, each run with its own folder first on the path;
tests load them with ``tests/benchmarks/loading.py``)."""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import threading
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


def write(path: str | Path, result: str | dict[str, Any], show: bool = False) -> Path:
    """Write a result (markdown text, or a JSON-able mapping) to ``path`` and say where; ``show``: print it first."""
    if show:
        print(result if isinstance(result, str) else json.dumps(result, indent=2, default=str))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result if isinstance(result, str) else json.dumps(result, indent=2, default=str) + "\n",
                    encoding="utf-8")
    print(f"wrote {path}")
    return path


def stored(path: str | Path, run: Any) -> dict[str, Any]:
    """The result stored at ``path`` (JSON), else ``run()``'s, stored there with the machine it ran on (``Machine``'s
    fields): a script of many runs resumes where it stopped, and each run names its own CPU, load and command."""
    path = Path(path)
    if path.is_file():
        return json.loads(path.read_text())
    machine = Machine()
    result = {**run(), **machine.fields()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(path.with_suffix(".tmp"), path)
    print(f"wrote {path}")
    return json.loads(path.read_text())


class local_ray:
    """A quiet local Ray of ``num_cpus`` for the ``with`` block (no dashboard, workers' logs not forwarded), shut down
    after it."""

    def __init__(self, num_cpus: int = 2, **init: Any) -> None:
        self.init = {"num_cpus": num_cpus, "include_dashboard": False, "log_to_driver": False, **init}

    def __enter__(self) -> Any:
        import ray

        return ray.init(**self.init)

    def __exit__(self, *exc: object) -> None:
        import ray

        ray.shutdown()


def mean_sd(values: list[float], digits: int = 3) -> str:
    """``mean ± sd`` over seeds (``xlt.eval.stats.mean_std``); the value alone for one."""
    from xlt.eval.stats import mean_std

    mean, sd = mean_std(values)
    return f"{mean:.{digits}f}" if len(values) == 1 else f"{mean:.{digits}f} ± {sd:.{digits}f}"


def padded_tokens(lengths: Any, batch_size: int, sort_by_length: bool, chunk: int | None = None) -> int:
    """The tokens an encoder computes over texts of ``lengths`` in batches of ``batch_size``: per batch, its rows times
    its longest, in ``TextEncoder.encode``'s order (by length when ``sort_by_length``); with ``chunk``, the texts
    come in chunks of that many rows (a labelling UDF's batches), each ordered and batched on its own."""
    import numpy as np

    lengths = np.asarray(lengths)
    total = 0
    for lo in range(0, len(lengths), chunk or len(lengths) or 1):
        part = lengths[lo:lo + (chunk or len(lengths))]
        order = np.argsort(part, kind="stable") if sort_by_length else np.arange(len(part))
        total += sum(len(b) * int(part[b].max()) for b in np.split(order, range(batch_size, len(order), batch_size)))
    return int(total)


def data_root(data_dir: str | None = None) -> Path:
    """The offline data root: ``data_dir``, else ``$XLT_DATA_DIR``, else ``../shared/data`` beside the checkout."""
    from xlt.data import resolve_data_dir

    shared = REPO.parent / "shared" / "data"
    if not data_dir and not os.environ.get("XLT_DATA_DIR") and shared.is_dir():
        data_dir = str(shared)
    return resolve_data_dir(data_dir)


def sib200(root: str | Path | None = None) -> Any:
    """The SIB-200 task of ``configs/tasks/sib200.yaml`` over the data root ``root`` (default: ``data_root()``)."""
    from xlt.config import from_dict, read_yaml
    from xlt.tasks import TaskConfig, load_task

    config = from_dict(TaskConfig, read_yaml(REPO / "configs" / "tasks" / "sib200.yaml"), prefix="task.")
    return load_task(config, root or data_root())


def cpu_busy_seconds() -> float:
    """Machine-wide non-idle CPU seconds so far, all cores together (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def timed(fn: Any) -> tuple[float, float]:
    """Call ``fn``: its wall seconds, and the share of all cores that other processes used meanwhile."""
    gc.collect()
    busy, own, start = cpu_busy_seconds(), time.process_time(), time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    others = cpu_busy_seconds() - busy - (time.process_time() - own)
    return wall, max(0.0, others / (wall * (os.cpu_count() or 1)))


def wait_until_quiet(limit_s: float, idle_share: float = 0.85, window_s: float = 5.0) -> str:
    """Wait, up to ``limit_s``, until the CPUs are mostly idle, so that other work does not skew the timings; what
    was found, for the result."""
    if limit_s <= 0:
        return "not checked"
    deadline = time.monotonic() + limit_s
    while True:
        busy, start = cpu_busy_seconds(), time.monotonic()
        time.sleep(window_s)
        idle = 1 - (cpu_busy_seconds() - busy) / ((time.monotonic() - start) * (os.cpu_count() or 1))
        if idle >= idle_share:
            return f"CPUs {idle:.0%} idle at the start"
        if time.monotonic() >= deadline:
            return f"CPUs still only {idle:.0%} idle after waiting {limit_s:.0f} s; started anyway"
        print(f"waiting for the CPUs to be idle ({idle:.0%} idle now) ...", file=sys.stderr)


def _role(process: Any, root: int) -> str:
    """What a process of a watched tree is: the driver, the raylet (which holds Ray's object store), a Ray worker,
    or another (GCS, dashboard agents, log monitor)."""
    if process.pid == root:
        return "driver"
    try:
        command = " ".join(process.cmdline())
    except Exception:  # gone, or not ours to read
        return "other"
    if "raylet" in command:
        return "raylet"
    return "workers" if command.startswith("ray::") or "default_worker.py" in command else "other"


class Watch:
    """A process and all its descendants (Ray's processes, when it started them), sampled in a thread every
    ``every`` seconds while the ``with`` block runs: the peaks, in MiB, of the sums of RSS, PSS (shared pages split
    among the processes mapping them, so the object store counts once) and USS, of PSS by role (``pss:driver``,
    ``pss:raylet``, ``pss:workers``, ``pss:other``), of the driver's RSS and of ``/dev/shm``'s growth; the number
    of processes; a timeline of the PSS sum. On exit: ``wall`` seconds, ``cpu`` seconds of the tree (a process
    that ends between two samples loses at most one interval) and ``others``, the cores other processes used.
    Reading every process's page map (PSS, USS) costs CPU: over Ray's eleven processes at four samples a second,
    most of a core, so throughput runs sample seldom, or only RSS (``full=False``, about a twentieth of that)."""

    def __init__(self, every: float = 0.5, pid: int | None = None, full: bool = True) -> None:
        import psutil

        self.every, self.full, self.root = every, full, psutil.Process(pid or os.getpid())
        self.peak: dict[str, float] = {}
        self.timeline: list[tuple[float, float]] = []
        self.samples, self.first_cpu, self.last_cpu = 0, {}, {}
        self.shm = shutil.disk_usage("/dev/shm").used
        self._stop = threading.Event()
        self.baseline = self.sample(record=False)
        self.first_cpu = dict(self.last_cpu)  # processes born later start at 0

    def sample(self, record: bool = True) -> float:
        import psutil

        try:
            family = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return 0.0
        sums: dict[str, float] = {"processes": len(family)}
        for process in family:
            try:
                memory = process.memory_full_info() if self.full else process.memory_info()
                times = process.cpu_times()
            except psutil.Error:
                continue
            self.last_cpu[process.pid] = times.user + times.system
            sizes = {"rss": memory.rss}
            if self.full:
                sizes.update(pss=memory.pss, uss=memory.uss, **{f"pss:{_role(process, self.root.pid)}": memory.pss})
            for key, value in sizes.items():
                sums[key] = sums.get(key, 0.0) + value / 2**20
            if process.pid == self.root.pid:
                sums["driver_rss"] = memory.rss / 2**20
        sums["shm"] = (shutil.disk_usage("/dev/shm").used - self.shm) / 2**20
        if record:
            self.samples += 1
            total = sums.get("pss", sums["rss"])
            self.timeline.append((round(time.perf_counter() - self.start, 1), round(total, 1)))
            for key, value in sums.items():
                self.peak[key] = max(self.peak.get(key, 0.0), value)
        return sums.get("pss", 0.0)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def __enter__(self) -> Watch:
        self.busy, self.start = cpu_busy_seconds(), time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
        self.wall = time.perf_counter() - self.start
        self.cpu = sum(cpu - self.first_cpu.get(pid, 0.0) for pid, cpu in self.last_cpu.items())
        self.others = max(0.0, (cpu_busy_seconds() - self.busy - self.cpu) / self.wall)


def watch_command(command: list[str], env: dict[str, str] | None = None, every: float = 0.25,
                  full: bool = True) -> Watch:
    """Run ``command`` from the repository root, watched (``Watch``) until it ends; raises with its output's tail
    when it fails."""
    proc = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
    reader.start()
    with Watch(every, proc.pid, full) as watch:
        proc.wait()
    reader.join()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{''.join(output)[-3000:]}")
    return watch


def view_batches(prepared: Any, batch_size: int) -> list[Any]:
    """A prepared fine-tuning job's train rows with the view columns its augmentation UDF adds, in ``ViewBatch``es of
    ``batch_size``, as the engine's loop takes them."""
    import numpy as np

    from xlt.augment import CrossLingualAugment
    from xlt.train.batches import batches_of, flatten_batch
    from xlt.train.data import augmentation_sources

    cfg, rows = prepared.config, prepared.train
    augment = CrossLingualAugment.from_config(cfg.data.augment, **augmentation_sources(cfg.data, prepared.task))
    views = augment({key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]})
    label_index = {label: i for i, label in enumerate(cfg.task.labels)}
    return [flatten_batch(b, label_index)
            for b in batches_of([{key: views[key][i] for key in views} for i in range(len(rows))], batch_size)]


def train_step(training: Any, batch: Any, max_grad_norm: float = 1.0) -> dict[str, float]:
    """One optimizer step of a fine-tuning ``training`` (``xlt.train.workload.finetune_training``) on one ``batch``
    (``xlt.train.ViewBatch``), as the engine's loop takes it; ``{"loss": total, "ce": ..., <objective>: ...}``."""
    from xlt.engine import accumulation_step
    from xlt.train.workload import FINETUNE

    return accumulation_step(training, lambda model, b: FINETUNE.loss(training, model, b), [batch], max_grad_norm)
