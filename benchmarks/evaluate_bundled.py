"""SIB-200 frozen-linear, Tatoeba retrieval and BUCC-style mining for both bundled models: what ``jobs/evaluate.py``
(the frozen-linear probe on SIB-200), ``--protocol tatoeba`` and ``--protocol mining`` run, with the SIB-200
reference of ``../shared/data/README.md`` beside our numbers.

    XLT_DATA_DIR=../shared/data python benchmarks/evaluate_bundled.py      # -> benchmarks/evaluate_bundled.md"""

from __future__ import annotations

import harness
from xlt.config import from_dict, merge_presets
from xlt.eval.protocols import EvaluateConfig, run_evaluation
from xlt.logs import quiet_libraries
from xlt.report import markdown_table

# ../shared/data/README.md, "Measured reference": (en, average over the nine other languages).
REFERENCE = {"bundled:multilingual-e5-small": (0.887, 0.835), "bundled:use-multilingual-v3": (0.873, 0.703)}


def main() -> None:
    args = harness.parser(__doc__, "evaluate_bundled.md", data_dir=True).parse_args()
    machine = harness.Machine()
    quiet_libraries()
    preset = merge_presets(harness.REPO / "configs" / "evaluate_sib200.yaml")  # the job's default: task, pairs, corpus
    data = {"data_dir": str(harness.data_root(args.data_dir))}
    sib, tat, mining = (run_evaluation(from_dict(EvaluateConfig, {**preset, "protocol": protocol, "data": data}))
                        for protocol in ("frozen-linear", "tatoeba", "mining"))
    langs = [r["lang"] for r in sib["rows"] if r["model"] == sib["rows"][0]["model"]]
    sib_rows, check_rows = [], []
    for model, (ref_en, ref_avg) in REFERENCE.items():
        acc = {r["lang"]: r["acc"] for r in sib["rows"] if r["model"] == model}
        c = next(r["probe_c"] for r in sib["rows"] if r["model"] == model)
        sib_rows.append({"model": model, "probe C": c, **{lang: acc[lang] for lang in langs}})
        check_rows.append({"model": model, "en": acc["en"], "reference en": ref_en, "Δ en": acc["en"] - ref_en,
                           "avg target": acc["avg_target"], "reference avg": ref_avg,
                           "Δ avg": acc["avg_target"] - ref_avg})
    protocols = "".join(f"- {p}\n" for p in dict.fromkeys(r["protocol"] for r in mining["rows"]))
    harness.write(args.out, f"{machine.header('Bundled encoders: SIB-200 frozen-linear and Tatoeba')}\n"
                  "## SIB-200 frozen-linear (zero-shot)\n\nLogistic regression on L2-normalised frozen embeddings of "
                  "the English train split (701), C chosen from (0.1, 1, 10, 100) by English dev accuracy, accuracy on "
                  "each language's test split (204). e5 uses its \"query: \" prefix and mean pooling.\n\n"
                  f"{markdown_table(sib_rows)}\n\nAgainst the reference in `../shared/data/README.md` (target ±0.02):"
                  f"\n\n{markdown_table(check_rows)}\n\n## Tatoeba top-1 retrieval (faiss, cosine)\n\nxx->en: each "
                  "non-English sentence retrieves among the English ones; en->xx the reverse.\n\n"
                  f"{markdown_table(tat['rows'])}\n\n## BUCC-style mining on Tatoeba\n\nBUCC itself is not available "
                  "offline. Each language's Tatoeba sentences are mined against their English side plus the English "
                  "side of the next language pair (unpaired distractors, exact copies of gold sentences removed).\n\n"
                  + markdown_table([{k: v for k, v in r.items() if k != "protocol"} for r in mining["rows"]])
                  + f"\n\nProtocol:\n\n{protocols}", show=True)


if __name__ == "__main__":
    main()
