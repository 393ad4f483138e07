"""The predict job's rows/s against a bare ``Classifier.predict`` loop on the same rows (issue 51).

    python benchmarks/predict_throughput.py                     # SIB-200 test rows of every language
    python benchmarks/predict_throughput.py --rows-per-lang 8 --output /tmp/p.md    # a check that it runs

The model: ``bundled:multilingual-e5-small`` with a fresh head over SIB-200's labels, written as a
fine-tuning checkpoint (throughput does not depend on the head's weights). The rows: the SIB-200
test sentences of every language (``configs/tasks/sib200.yaml``), ``--rows-per-lang`` of each (0: all).

1. bare loop: ``load_classifier(checkpoint).predict`` over the texts in this process, in batches of
   64 (length-bucketed), fp32, every core: what the job is held to;
2. the job's work in this process (``inference.num_actors: 0``): ``xlt.predict.prepare`` and
   ``predict``, which reads and checks the rows, labels them shard by shard and writes Parquet;
3. the same through an actor pool of ``--actors`` actors (what a cluster runs), counting their
   start-up and model load.

All at fp32 (the job's default, whose predictions equal ``Classifier.predict``). Wall clock of a
full pass each; the bare loop after a warm-up batch. Writes ``--output`` (markdown) with the
command, CPU and load.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def get_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows-per-lang", type=int, default=0, help="test rows of each language (0: all)")
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256, help="inference.batch_size: rows per Ray Data batch, "
                        "sorted by length within it")
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "predict_throughput.md"))
    return parser.parse_args()


def write_checkpoint(directory: Path) -> Path:
    """An e5 classifier over SIB-200's labels with a fresh head, as a fine-tuning checkpoint."""
    import torch

    from xlt.engine import write_state
    from xlt.train import load_finetune_config, prepare
    from xlt.train.workload import finetune_training

    torch.manual_seed(0)
    cfg = prepare(load_finetune_config(REPO / "configs" / "finetune_sib200.yaml", ["data.max_examples=16"])).config
    return write_state(directory, finetune_training(cfg, steps_per_epoch=1), cfg)


def main() -> None:
    import ray

    from xlt.cli import init_ray
    from xlt.cotrain.config import InferenceSettings
    from xlt.hardware import cpu_model
    from xlt.logs import quiet_libraries
    from xlt.predict import InputConfig, ModelRef, PredictConfig, predict, prepare
    from xlt.report import command_line, markdown_table
    from xlt.storage import OutputSettings
    from xlt.tasks import TaskConfig
    from xlt.config import from_dict, read_yaml
    from xlt.train import load_classifier

    args = get_args()
    quiet_libraries()
    load_start, started = os.getloadavg()[0], time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    work = Path(tempfile.mkdtemp(prefix="xlt-predict-throughput-"))
    model = write_checkpoint(work / "model")
    task = from_dict(TaskConfig, read_yaml(REPO / "configs" / "tasks" / "sib200.yaml"), prefix="task.")

    def config(name: str, actors: int) -> PredictConfig:
        return PredictConfig(model=ModelRef(str(model)),
                             input=InputConfig(task=task, split="test", max_rows=args.rows_per_lang),
                             output=OutputSettings(str(work / name)),
                             inference=InferenceSettings(num_actors=actors, num_cpus=2 / max(actors, 1),
                                                         batch_size=args.batch_size, encode_batch_size=64,
                                                         precision="fp32"))

    rows = list(prepare(config("probe", 0)).input.rows())
    texts = [r["text"] for r in rows]
    classifier = load_classifier(model)
    classifier.predict(texts[:64])  # warm-up
    start = time.perf_counter()
    classifier.predict(texts, batch_size=64)
    results = [{"run": "bare loop: Classifier.predict, in process", "seconds": time.perf_counter() - start}]

    init_ray(num_cpus=2)
    for name, actors in (("predict job, in process (num_actors: 0)", 0), (f"predict job, {args.actors} actors", args.actors)):
        start = time.perf_counter()
        prepared = prepare(config(f"job-{actors}-actors", actors))
        written = predict(prepared)
        assert written.rows == len(rows)
        results.append({"run": name, "seconds": time.perf_counter() - start})
    ray.shutdown()

    bare = results[0]["seconds"]
    table = [{"run": r["run"], "rows": len(rows), "seconds": f"{r['seconds']:.1f}",
              "rows/s": f"{len(rows) / r['seconds']:.1f}", "vs bare loop": f"{bare / r['seconds']:.2f}"} for r in results]
    text = "\n".join([
        "# Predict throughput: the job against a bare loop (issue 51)", "",
        f"Command: `{command_line()}`  ",
        f"Date: {started}. CPU: {cpu_model()}, {os.cpu_count()} cores; 1-minute load {load_start:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end.", "",
        "Model: bundled:multilingual-e5-small with a fresh head over SIB-200's 7 labels (a fine-tuning checkpoint); "
        f"rows: SIB-200 test sentences, every language; fp32 everywhere, batches of 64 texts, length-bucketed "
        f"(the job: within Ray Data batches of {args.batch_size} rows).", "",
        markdown_table(table), "",
    ])
    Path(args.output).write_text(text, encoding="utf-8")
    (work / "results.json").write_text(json.dumps(results))
    print(text)


if __name__ == "__main__":
    main()
