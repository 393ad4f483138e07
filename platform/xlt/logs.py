"""How quiet xlt and the libraries under it are: the job's own lines always, Ray's notices only with ``--verbose``.

``configure_logging``: the driver's handlers and levels. ``setup_worker``: the same in every Ray
worker process (``xlt.cli.init_ray`` installs it as the ``worker_process_setup_hook``).
``train_logging_level``: Ray Train's level for a run (``xlt.engine.runs``). ``quiet_libraries``:
stdout is for results, not for library load reports.
"""

from __future__ import annotations

import logging
import os
import sys
from .ray_internals import train_report_logger

VERBOSE_ENV = "XLT_VERBOSE"
# Libraries that configure their own loggers when imported read these (Ray Data's executor lines,
# MLflow's store set-up notices); Ray Train's are set per run (``train_logging_level``).
QUIET_ENV = {"RAY_DATA_LOG_LEVEL": "ERROR", "MLFLOW_LOGGING_LEVEL": "WARNING",
             "RAY_DATA_DISABLE_PROGRESS_BARS": "1"}  # a sweep trial's datasets drew a bar each
# Ray's own Python loggers: its start-up notices, Train's controller, workers' checkpoint reports
# and placement-group cleaner, Data's executor and issue detectors.
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


def tune_verbosity() -> int:
    """``tune.run``'s ``verbose`` for a sweep or study: its trial tables and notices only with ``--verbose``; the
    job draws its own bar of trials (``xlt.progress.trials_progress``) instead."""
    return 1 if os.environ.get(VERBOSE_ENV, "1") == "1" else 0


def setup_worker() -> None:
    """Ray's ``worker_process_setup_hook`` for every job: each worker process as quiet as the driver
    (and, quiet, without libraries' deprecation warnings, which are for their developers)."""
    import warnings

    quiet_libraries()
    verbose = os.environ.get(VERBOSE_ENV) == "1"
    _quiet_ray(verbose)
    if not verbose:
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        # A Train worker's "Reporting training result ..." per epoch.
        logging.getLogger(train_report_logger()).setLevel(logging.WARNING)


def _quiet_ray(verbose: bool) -> None:
    if not verbose:
        for name in RAY_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
        # Tune's notices too: a sweep or study draws its own bar of trials in place of Tune's tables.
        logging.getLogger("ray.tune").setLevel(logging.WARNING)
        logging.getLogger("alembic").setLevel(logging.WARNING)  # the tracking store's migrations


# What transformers and huggingface_hub read when imported: their level, and their progress bars
# (the "Loading weights" bars) off.
LIBRARY_ENV = {"TOKENIZERS_PARALLELISM": "false", "TRANSFORMERS_VERBOSITY": "error",
               "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def quiet_libraries() -> None:
    """Silence transformers' load reports and progress bars, and hub warnings: through the
    environment, which they read when imported, and directly if they already are. Not by
    importing them: every Ray worker process runs this (``setup_worker``), and importing
    transformers costs 1–2 s a process, seven processes per Ray Train run."""
    for name, value in LIBRARY_ENV.items():
        os.environ.setdefault(name, value)
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
