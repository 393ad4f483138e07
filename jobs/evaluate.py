"""Evaluate frozen multilingual encoders: Tatoeba retrieval, BUCC-style mining, SIB-200 probing.

    python jobs/evaluate.py --task tatoeba
    python jobs/evaluate.py --task mining --set mining_k=4
    python jobs/evaluate.py --task sib200 --mode frozen-linear
    python jobs/evaluate.py --config configs/evaluate_sib200.yaml --set 'models=[{source: tiny:bert}]'
    python jobs/evaluate.py --task sib200 --smoke

Prints a per-language table per model and writes ``<output_dir>/<task>.json`` (rows, config,
command) with ``config.yaml`` beside it.
"""

from __future__ import annotations

from pathlib import Path

from xlt.cli import job_parser, quiet_libraries, run_job
from xlt.config import apply_overrides, from_dict, read_yaml, save_config
from xlt.eval.tasks import EvaluateConfig, run_evaluation
from xlt.report import markdown_table, write_results

SMOKE = ["models=[{source: 'tiny:bert'}]", "max_examples=16", "languages=[en, de, zh]", "batch_size=8",
         "output_dir=results/evaluate-smoke"]


def main() -> None:
    parser = job_parser(__doc__)
    parser.add_argument("--task", choices=["tatoeba", "mining", "sib200"])
    parser.add_argument("--mode", choices=["frozen-linear"])
    args = parser.parse_args()
    quiet_libraries()

    data = read_yaml(args.config) if args.config else {}
    overrides = (SMOKE if args.smoke else []) + args.overrides
    overrides += [f"{k}={v}" for k, v in (("task", args.task), ("mode", args.mode), ("data_dir", args.data_dir)) if v]
    if args.smoke and (args.task or data.get("task")) in ("tatoeba", "mining"):
        overrides.append("languages=[de, zh]")
    cfg = from_dict(EvaluateConfig, apply_overrides(data, overrides))

    result = run_evaluation(cfg)
    for source in dict.fromkeys(r["model"] for r in result["rows"]):
        rows = [r for r in result["rows"] if r["model"] == source]
        print(f"\n## {cfg.task}{' ' + cfg.mode if cfg.task == 'sib200' else ''}: {source}\n")
        print(markdown_table([{k: v for k, v in r.items() if k not in ("model", "protocol")} for r in rows]))
        for protocol in dict.fromkeys(r["protocol"] for r in rows if "protocol" in r):
            print(f"\nProtocol: {protocol}")
    out = Path(cfg.output_dir)
    save_config(cfg, out / "config.yaml")
    print(f"\nwrote {write_results(out / f'{cfg.task}.json', {**result, 'config': cfg})}")


if __name__ == "__main__":
    run_job(main)
