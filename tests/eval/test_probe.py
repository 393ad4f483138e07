"""The frozen-linear probe's per-item predictions against a hand-made reference of its procedure."""

import zlib
from pathlib import Path

import numpy as np
import pytest

from xlt.config import from_dict, read_yaml
from xlt.eval.protocols import EvaluateConfig, EvaluateData, frozen_linear_predictions, frozen_linear_rows
from xlt.models import EncoderConfig
from xlt.tasks import TaskConfig, load_task

REPO_CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "tasks"


class HashEncoder:
    """A stand-in encoder: each text's embedding is a fixed random vector (seeded by the text), plus a
    label-revealing direction for texts listed in ``hints``, so the probe has something to learn."""

    def __init__(self, hints: dict[str, int], dim: int = 16):
        self.hints, self.dim = hints, dim

    def encode(self, texts, batch_size=64, normalize=False, progress=False, **_):
        out = []
        for text in texts:
            rng = np.random.default_rng(zlib.crc32(text.encode()))
            v = rng.normal(size=self.dim)
            if text in self.hints:
                v[self.hints[text]] += 3.0
            out.append(v / np.linalg.norm(v) if normalize else v)
        return np.asarray(out, dtype=np.float32)


@pytest.fixture
def task(data_dir):
    raw = read_yaml(REPO_CONFIGS / "sib200.yaml")
    raw["target_langs"] = ["de", "zh"]
    return load_task(from_dict(TaskConfig, raw, prefix="task."), data_dir)


def test_predictions_equal_a_reference_fit(task):
    from sklearn.linear_model import LogisticRegression

    cfg = EvaluateConfig(task=task.config, models=(EncoderConfig(source="tiny:bert"),),
                         data=EvaluateData(max_examples=40), progress=False)
    examples = {(role, lang): task.examples(role, lang, 40) for role, lang in
                [("train", "en"), ("dev", "en"), *[("test", lang) for lang in task.langs]]}
    hints = {ex.text: task.labels.index(ex.label) for exs in examples.values() for ex in exs[::2]}
    encoder = HashEncoder(hints)

    def xy(role, lang):
        exs = examples[role, lang]
        return encoder.encode([ex.text for ex in exs], normalize=True), np.array([task.labels.index(ex.label) for ex in exs])

    fits = {c: LogisticRegression(C=c, max_iter=2000, random_state=0).fit(*xy("train", "en")) for c in cfg.probe_c}
    x_dev, y_dev = xy("dev", "en")
    best = max(sorted(fits), key=lambda c: (np.mean(fits[c].predict(x_dev) == y_dev), -c))
    got = frozen_linear_predictions(encoder, task, cfg)
    assert got.c == best
    offset = 0
    for lang in task.langs:
        x, y = xy("test", lang)
        n = len(y)
        assert got.ids[offset:offset + n] == [ex.id for ex in examples["test", lang]]
        assert got.langs[offset:offset + n] == [lang] * n
        np.testing.assert_array_equal(got.gold[offset:offset + n], y)
        np.testing.assert_array_equal(got.predicted[offset:offset + n], fits[best].predict(x))
        offset += n
    assert offset == len(got.ids)
    rows = {r["lang"]: r for r in frozen_linear_rows(encoder, task, cfg).rows}
    for lang in task.langs:
        mine = np.asarray(got.langs) == lang
        assert rows[lang]["acc"] == pytest.approx(np.mean(got.gold[mine] == got.predicted[mine]))


def test_a_centred_probe_centres_each_target_on_the_pool_draw_the_run_may_read(task):
    from sklearn.linear_model import LogisticRegression

    from xlt.eval.adaptation import ProbeAdaptation

    cfg = EvaluateConfig(task=task.config, models=(EncoderConfig(source="tiny:bert"),),
                         data=EvaluateData(max_examples=40), progress=False, adapt=ProbeAdaptation(center=True))
    train, dev = task.examples("train", "en", 40), task.examples("dev", "en", 40)
    encoder = HashEncoder({ex.text: task.labels.index(ex.label) for ex in train + dev})

    def centred(examples, anchor):
        x, mean = encoder.encode([ex.text for ex in examples], normalize=True), \
            encoder.encode([ex.text for ex in anchor], normalize=True).mean(0)
        return (x - mean) / np.linalg.norm(x - mean, axis=1, keepdims=True)

    y = np.array([task.labels.index(ex.label) for ex in train])
    y_dev = np.array([task.labels.index(ex.label) for ex in dev])
    fits = [LogisticRegression(C=c, max_iter=2000, random_state=0).fit(centred(train, train), y) for c in cfg.probe_c]
    best = fits[int(np.argmax([np.mean(f.predict(centred(dev, train)) == y_dev) for f in fits]))]
    got = frozen_linear_predictions(encoder, task, cfg)
    langs = np.asarray(got.langs)
    english = task.examples("test", "en", 40)
    assert got.predicted[langs == "en"].tolist() == best.predict(centred(english, train)).tolist()
    for lang in task.target_langs:  # each target on the mean of the 40 rows of its pool split the run may read
        pool = task.examples("pool", lang, 40)
        test = task.examples("test", lang, 40)
        assert got.predicted[langs == lang].tolist() == best.predict(centred(test, pool)).tolist()

    from xlt.config import ConfigError
    from xlt.eval.protocols import example_embedder, probe_rows

    with pytest.raises(ConfigError, match=r"pool of every scored target language; none for \['zh'\]"):
        probe_rows(example_embedder(encoder, task, cfg), task, train, dev, {"en": train, "zh": dev}, cfg, {"de": dev})
