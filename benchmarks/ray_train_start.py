"""What one Ray Train run costs around its work: a one-worker ``TorchTrainer`` of an empty train function, three
runs in one driver, with Ray Train V2's own observability knobs as they are (``on``) or all off (``off``).

    python benchmarks/ray_train_start.py on; python benchmarks/ray_train_start.py off   # alternate, twice

Prints the mode, the run's index and its wall seconds, a line per run. Figures: ``benchmarks/test_time.md`` (issue 73).
"""

from __future__ import annotations

import os
import tempfile

import harness

KNOBS = ("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "RAY_TRAIN_ENABLE_CONTROLLER_STRUCTURED_LOGGING",
         "RAY_TRAIN_ENABLE_WORKER_STRUCTURED_LOGGING", "RAY_TRAIN_ENABLE_STATE_ACTOR_RECONCILIATION",
         "RAY_TRAIN_METRICS_ENABLED")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("mode", nargs="?", default="on", choices=("on", "off"))
    mode = parser.parse_args().mode
    if mode == "off":
        os.environ.update({knob: "0" for knob in KNOBS})  # before Ray starts: its processes inherit them
    import ray.train
    from ray.train.torch import TorchTrainer

    from xlt.cli import init_ray

    init_ray(num_cpus=2)
    with tempfile.TemporaryDirectory(prefix="ray-train-start-") as storage:
        for i in range(3):
            seconds, _ = harness.timed(lambda: TorchTrainer(
                lambda: ray.train.report({"x": 1}), scaling_config=ray.train.ScalingConfig(num_workers=1),
                run_config=ray.train.RunConfig(storage_path=storage, name=f"run{i}")).fit())
            print(mode, i, round(seconds, 2), flush=True)


if __name__ == "__main__":
    main()
