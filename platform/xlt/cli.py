"""What every job and benchmark shares on the command line.

``job_parser``: ``--config``, repeated ``--set key=value``, ``--data-dir``, ``--smoke``, ``--address``,
``--debug``, ``--no-tracking``. ``run_job``: a job's ``main`` with bad input reported as one ``error: ...`` line and
exit status 2 (the traceback with ``--debug``).
``init_ray``: the cluster of ``--address`` / ``$RAY_ADDRESS`` (``ray job submit`` sets it), else a
new local Ray. ``quiet_libraries``: stdout is for results, not for library load reports.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable

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


def job_overrides(args: argparse.Namespace) -> list[str]:
    """The ``--set`` overrides, with ``--data-dir`` as ``data.data_dir``."""
    return args.overrides + ([f"data.data_dir={args.data_dir}"] if args.data_dir else [])


def init_ray(address: str | None = None) -> None:
    """Connect to ``address`` or ``$RAY_ADDRESS``; otherwise start a local Ray. Not ``ray.init()``'s
    default, which attaches to whichever cluster this machine started last."""
    import ray

    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address)
    else:
        ray.init(address="local", include_dashboard=False)


def quiet_libraries() -> None:
    """Silence transformers' load reports and progress bars, and hub warnings."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
