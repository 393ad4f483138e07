"""The torch threads Ray's processes get (``OMP_NUM_THREADS``, ``torch.get_num_threads()``): actors of 0.5, 1 and
2 CPUs, a task of 1 CPU, Ray Train workers of 1 and 2 CPUs, on a local ``ray.init(num_cpus=2)`` (issue 48's check;
the reading is in ``benchmarks/pseudo_label_throughput.md``).

    python benchmarks/ray_threads.py"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import ray
import torch
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

import harness


class Probe:  # an actor's class, its static method the task and the probe of the Ray Train worker and the driver
    @staticmethod
    def probe() -> tuple[str | None, int]:
        return os.environ.get("OMP_NUM_THREADS"), torch.get_num_threads()


def train_function(config: dict) -> None:
    Path(config["out"]).write_text(json.dumps(Probe.probe()))  # one worker: the driver reads it after the run


def main() -> None:
    harness.parser(__doc__).parse_args()
    with harness.local_ray(2, logging_level="ERROR"), tempfile.TemporaryDirectory() as storage:
        for cpus in (0.5, 1, 2):
            actor = ray.remote(num_cpus=cpus)(Probe).remote()
            print(f"actor of {cpus} CPU: OMP_NUM_THREADS, torch threads = {ray.get(actor.probe.remote())}")
            ray.kill(actor)
        print(f"task of 1 CPU: {ray.get(ray.remote(num_cpus=1)(Probe.probe).remote())}")
        for cpus in (1, 2):
            out = Path(storage, f"threads-{cpus}.json")
            TorchTrainer(train_function, train_loop_config={"out": str(out)},
                         scaling_config=ScalingConfig(num_workers=1, resources_per_worker={"CPU": cpus}),
                         run_config=RunConfig(storage_path=storage, name=out.stem)).fit()
            print(f"Ray Train worker of {cpus} CPU: {tuple(json.loads(out.read_text()))}")
        print(f"driver: {Probe.probe()}")


if __name__ == "__main__":
    main()
