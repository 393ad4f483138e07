"""What every job and benchmark shares on the command line.

``job_parser``: ``--config``, repeated ``--set key=value``, ``--data-dir``, ``--smoke``, ``--address``,
``--debug``, ``--verbose``, ``--no-tracking``, ``--dry-run`` (``dry_run``: the plan it prints). ``epilogue``: a
job's last lines (outputs, resume, look). ``run_job``: a job's ``main`` with bad input reported as one
``error: ...`` line and exit status 2 (the traceback with ``--debug``). ``init_ray``: the cluster of ``--address`` /
``$RAY_ADDRESS`` (``ray job submit`` sets it), else a new local Ray, its workers as quiet as the
driver (``xlt.logs``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .config import ConfigError
from .data.errors import DataError
from .data.ray_data import settle_on_driver_node
from .extras import MissingExtra
from .logs import QUIET_ENV, VERBOSE_ENV

# What bad input raises: a config value, a data file, a missing path. A user fixes these from the
# message alone; anything else is a bug and keeps its traceback.
USER_ERRORS = (ConfigError, DataError, FileExistsError, FileNotFoundError, LookupError, MissingExtra, ValueError)
# How often a Ray Train run's controller polls its workers (Ray's default: 2 s). A worker's report
# waits until the controller has taken the previous one, so epochs shorter than the poll are
# stretched to it: a fit of short epochs (a head on cached embeddings) would be the poll's length
# times its epochs (benchmarks/learner_fit.md).
TRAIN_POLL_S = "0.25"


def job_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="YAML preset (see configs/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override one config key, e.g. --set batch_size=32 (repeatable)")
    parser.add_argument("--data-dir", help="data root (default: $XLT_DATA_DIR)")
    parser.add_argument("--smoke", action="store_true", help="tiny model and a few examples: seconds, for tests")
    parser.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a new local Ray)")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser.add_argument("--verbose", action="store_true", help="show Ray's own log lines and warnings too")
    parser.add_argument("--no-tracking", dest="tracking", action="store_false",
                        help="log nothing to MLflow ($MLFLOW_TRACKING_URI, else results/mlruns) or TensorBoard")
    parser.add_argument("--dry-run", action="store_true",
                        help="resolve the config, check its inputs and model, print the plan; train and write nothing")
    return parser


def run_job(main: Callable[[], None]) -> None:
    """Run a job's ``main``; bad input (``USER_ERRORS``) prints ``error: <message>`` on stderr and
    exits with status 2, as argparse does for a bad flag; ``--debug`` shows the traceback instead."""
    if "--debug" in sys.argv:
        main()
        return
    try:
        main()
    except USER_ERRORS as e:
        message = " ".join(str(e).split("\n")) if str(e) else type(e).__name__
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def resumable_job_args(description: str):
    """``job_parser`` + ``--resume RUN_DIR`` (continue a Ray Train run with its saved config),
    parsed; ``--resume`` with ``--config`` or ``--smoke`` is an error."""
    parser = job_parser(description)
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR with its saved config")
    args = parser.parse_args()
    if args.resume and (args.config or args.smoke):
        parser.error("--resume continues a run with its saved config; it takes no --config or --smoke")
    return args


def epilogue(outputs: Mapping[str, str | os.PathLike], resume: str, look: Sequence[str] = ()) -> str:
    """What a job prints last: where each output went, how to resume or extend it, how to look at it."""
    width = max(map(len, outputs), default=0)
    lines = ["outputs:", *(f"  {name.ljust(width)}  {path}" for name, path in outputs.items()),
             f"resume:  {resume}"]
    lines += [f"look:    {line}" for line in look]
    return "\n".join(lines)


def dry_run(job: str, output: str, state: str, config: Any, facts: Mapping[str, str]) -> None:
    """What a job's ``--dry-run`` prints on stdout, its config resolved and its inputs checked: where it would write
    (``output``, and what is there: ``state``), the fingerprint of what ``config`` computes (``xlt.resume``: two
    commands that share a directory share it; ``None``: a job without a config, which takes nothing but its
    arguments), and ``facts`` (task, model, plan), one line each."""
    from .resume import fingerprint
    from .storage import shown_path

    output = shown_path(output)  # as the command's own relative paths name it
    width = max(map(len, ["output", *facts]))
    tag = f" [config {fingerprint(config)}]" if config is not None else ""
    lines = [f"{job} --dry-run: the config resolved, its inputs and model checked; nothing trained or written",
             f"  {'output'.ljust(width)}  {output}: {state}{tag}",
             *(f"  {name.ljust(width)}  {text}" for name, text in facts.items())]
    print("\n".join(lines))


def job_overrides(args: argparse.Namespace) -> list[str]:
    """The ``--set`` overrides, with ``--data-dir`` as ``data.data_dir``."""
    return args.overrides + ([f"data.data_dir={args.data_dir}"] if args.data_dir else [])


def init_ray(address: str | None = None, verbose: bool = False, num_cpus: int | None = None,
             needed: bool = True) -> None:
    """Connect to ``address`` or ``$RAY_ADDRESS``; otherwise start a local Ray (of ``num_cpus``
    CPUs; by default the machine's) if the job ``needed`` one: a job that trains in its own process
    on rows it holds runs without (``xlt.engine.rows``: a local Ray's processes slow its steps, and
    starting it takes seconds). Not ``ray.init()``'s default, which attaches to whichever cluster
    this machine started last. Every worker process runs ``xlt.logs.setup_worker`` first, so that
    it is as quiet as the driver (``xlt.logs.configure_logging``)."""
    address = address or os.environ.get("RAY_ADDRESS")
    if not (address or needed):
        return
    import ray

    # Train's print patch would route tqdm_ray's state lines into its logger: bars would not draw.
    env_vars = {VERBOSE_ENV: "1" if verbose else "0", "RAY_TRAIN_ENABLE_PRINT_PATCH": "0",
                "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": TRAIN_POLL_S,
                **{name: value for name, value in QUIET_ENV.items() if not verbose}}
    options = dict(runtime_env={"worker_process_setup_hook": "xlt.logs.setup_worker", "env_vars": env_vars},
                   logging_level=logging.INFO if verbose else logging.ERROR)
    if address:
        ray.init(address=address, **options)
        settle_on_driver_node()
    else:
        # One machine is never preempted: no preemption-watcher actor per Ray Train run (one process
        # fewer to start per fit, and no core-worker error about its restartable arguments).
        env_vars["RAY_TRAIN_ENABLE_PREEMPTION_WATCHER"] = "0"
        ray.init(address="local", include_dashboard=False, num_cpus=num_cpus, **options)
