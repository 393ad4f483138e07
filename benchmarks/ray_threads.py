"""The torch threads Ray's processes get: ``OMP_NUM_THREADS`` and ``torch.get_num_threads()`` in an
actor of 0.5, 1 and 2 CPUs, a task of 1 CPU, and a Ray Train worker of 1 and 2 CPUs, on a local
``ray.init(num_cpus=2)`` (issue 48's check; the reading is in ``benchmarks/pseudo_label_throughput.md``).

    python benchmarks/ray_threads.py
"""

from __future__ import annotations

import json
import os
import tempfile

import harness


def probe() -> tuple[str | None, int]:
    import torch

    return os.environ.get("OMP_NUM_THREADS"), torch.get_num_threads()


class Probe:
    def probe(self) -> tuple[str | None, int]:
        return probe()


def train_function(config: dict) -> None:
    with open(config["out"], "w") as f:  # one worker: the driver reads it after the run
        json.dump(probe(), f)


def main() -> None:
    harness.parser(__doc__).parse_args()
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    for cpus in (0.5, 1, 2):
        actor = ray.remote(num_cpus=cpus)(Probe).remote()
        print(f"actor of {cpus} CPU: OMP_NUM_THREADS, torch threads = {ray.get(actor.probe.remote())}")
        ray.kill(actor)
    print(f"task of 1 CPU: {ray.get(ray.remote(num_cpus=1)(probe).remote())}")
    with tempfile.TemporaryDirectory() as storage:
        for cpus in (1, 2):
            out = os.path.join(storage, f"threads-{cpus}.json")
            TorchTrainer(train_function, train_loop_config={"out": out},
                         scaling_config=ScalingConfig(num_workers=1, resources_per_worker={"CPU": cpus}),
                         run_config=RunConfig(storage_path=storage, name=f"threads-{cpus}")).fit()
            with open(out) as f:
                print(f"Ray Train worker of {cpus} CPU: {tuple(json.load(f))}")
    print(f"driver: {probe()}")
    ray.shutdown()


if __name__ == "__main__":
    main()
