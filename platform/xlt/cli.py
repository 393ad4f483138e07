"""What every job and benchmark shares on the command line.

``job_parser``: ``--config``, repeated ``--set key=value``, ``--data-dir``, ``--smoke``, ``--address``,
``--debug``, ``--verbose``, ``--no-tracking``. ``epilogue``: a job's last lines (outputs, resume, look). ``configure_logging``: the job's lines, Ray's only with
``--verbose``. ``run_job``: a job's ``main`` with bad input reported as one ``error: ...`` line and
exit status 2 (the traceback with ``--debug``).
``init_ray``: the cluster of ``--address`` / ``$RAY_ADDRESS`` (``ray job submit`` sets it), else a
new local Ray. ``quiet_libraries``: stdout is for results, not for library load reports.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from .config import ConfigError
from .data.errors import DataError

# What bad input raises: a config value, a data file, a missing path. A user fixes these from the
# message alone; anything else is a bug and keeps its traceback.
USER_ERRORS = (ConfigError, DataError, FileNotFoundError, LookupError, ValueError)


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


def job_overrides(args: argparse.Namespace) -> list[str]:
    """The ``--set`` overrides, with ``--data-dir`` as ``data.data_dir``."""
    return args.overrides + ([f"data.data_dir={args.data_dir}"] if args.data_dir else [])


def init_ray(address: str | None = None, verbose: bool = False) -> None:
    """Connect to ``address`` or ``$RAY_ADDRESS``; otherwise start a local Ray. Not ``ray.init()``'s
    default, which attaches to whichever cluster this machine started last. Every worker process
    runs ``setup_worker`` first, so that it is as quiet as the driver (see ``configure_logging``)."""
    import ray

    address = address or os.environ.get("RAY_ADDRESS")
    # Train's print patch would route tqdm_ray's state lines into its logger: bars would not draw.
    env_vars = {VERBOSE_ENV: "1" if verbose else "0", "RAY_TRAIN_ENABLE_PRINT_PATCH": "0",
                **{name: value for name, value in QUIET_ENV.items() if not verbose}}
    options = dict(runtime_env={"worker_process_setup_hook": "xlt.cli.setup_worker", "env_vars": env_vars},
                   logging_level=logging.INFO if verbose else logging.ERROR)
    if address:
        ray.init(address=address, **options)
    else:
        # One machine is never preempted: no preemption-watcher actor per Ray Train run (one process
        # fewer to start per fit, and no core-worker error about its restartable arguments).
        env_vars["RAY_TRAIN_ENABLE_PREEMPTION_WATCHER"] = "0"
        ray.init(address="local", include_dashboard=False, **options)


VERBOSE_ENV = "XLT_VERBOSE"
# Libraries that configure their own loggers when imported read these (Ray Data's executor lines,
# MLflow's store set-up notices); Ray Train's are set per run (``train_logging_level``).
QUIET_ENV = {"RAY_DATA_LOG_LEVEL": "ERROR", "MLFLOW_LOGGING_LEVEL": "WARNING"}
# Ray's own Python loggers: its start-up notices, Train's controller, workers' checkpoint reports
# and placement-group cleaner, Data's executor and issue detectors. Ray Tune's trial table is the
# progress of a sweep and stays.
RAY_LOGGERS = ("ray", "ray.data", "ray.train", "ray.air")


def configure_logging(verbose: bool = False) -> None:
    """The job's own lines on stderr (``HH:MM:SS message``: its loggers at INFO) and, unless
    ``verbose``, none of Ray's notices and warnings: its Python loggers at ERROR here and in every
    worker (``setup_worker``), its C++ core at ERROR in the processes of a local Ray this job
    starts (``RAY_BACKEND_LOG_LEVEL``). Errors always show."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    os.environ[VERBOSE_ENV] = "1" if verbose else "0"
    if not verbose:
        for name, value in QUIET_ENV.items():
            os.environ.setdefault(name, value)
    _quiet_ray(verbose)


def train_logging_level() -> str:
    """Ray Train's own log level for a run (``RunConfig.logging_config``): its controller's and
    workers' notices (resources requested, worker group started, checkpoint reported) only with
    ``--verbose``."""
    return "INFO" if os.environ.get(VERBOSE_ENV, "1") == "1" else "WARNING"


def setup_worker() -> None:
    """Ray's ``worker_process_setup_hook`` for every job: each worker process as quiet as the driver
    (and, quiet, without libraries' deprecation warnings, which are for their developers)."""
    import warnings

    import ray

    quiet_libraries()
    verbose = os.environ.get(VERBOSE_ENV) == "1"
    _quiet_ray(verbose)
    if not verbose:
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        # A Train worker's "Reporting training result ..." per epoch comes from a logger named by
        # its module's file path, outside the ``ray`` hierarchy.
        context = os.path.join(os.path.dirname(ray.__file__), "train", "v2", "_internal", "execution", "context.py")
        logging.getLogger(context).setLevel(logging.WARNING)


def _quiet_ray(verbose: bool) -> None:
    if not verbose:
        for name in RAY_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
        logging.getLogger("ray.tune").setLevel(logging.INFO)
        logging.getLogger("alembic").setLevel(logging.WARNING)  # the tracking store's migrations


def quiet_libraries() -> None:
    """Silence transformers' load reports and progress bars, and hub warnings."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
