"""benchmarks/fidelity.py: the smoke comparison killed after its first stored unit, then continued; benchmarks/fit.py on
its units."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO

FIDELITY = REPO / "benchmarks" / "fidelity.py"
UNITS = {"ce/seed0", "ce/seed1", "scl/seed0", "scl/seed1"}


@pytest.mark.ray
def test_a_killed_comparison_continues_with_the_units_not_stored(data_dir, tmp_path):
    out = tmp_path / "fidelity.md"
    command = [sys.executable, str(FIDELITY), "smoke", "--seeds", "0", "1", "--out", str(out),
               "--storage", str(tmp_path / "runs")]
    env = {**os.environ, "XLT_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "RAY_ADDRESS": ""}
    store = out.with_suffix(".json")

    def stored() -> dict:
        return json.loads(store.read_text())["units"].get("smoke", {}) if store.is_file() else {}

    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and not stored():
        time.sleep(0.1)  # a unit trains in the runner's process in seconds: kill within the next one
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its local Ray, in the middle of the next unit
    proc.wait()
    first = stored()
    assert 1 <= len(first) < len(UNITS), first.keys()

    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    units = stored()
    assert set(units) == UNITS
    for key, record in first.items():
        assert units[key] == record and f"== smoke {key}: stored" in done.stderr  # not run again
    for record in units.values():
        assert record["rows"] == "seeded draws"
        assert len(record["items"]) == 32  # 16 test sentences in each of de and zh, one 0/1 each
        hits = [c == "1" for c in record["items"]]
        assert record["acc"]["avg_target"] == sum(hits) / 32  # the items are what the accuracy counts
        assert record["acc"]["avg_target"] == (record["acc"]["de"] + record["acc"]["zh"]) / 2
    text = out.read_text()
    assert "python benchmarks/fidelity.py smoke --seeds 0 1" in text.replace(str(FIDELITY), "benchmarks/fidelity.py")
    assert re.search(r"\| CE\+SCL +\| 2 +\|", text) and re.search(r"\| CE\+SCL − CE +\| none \(runner check\)", text)
    assert (tmp_path / "fidelity_smoke.png").is_file() and "rows: seeded draws." in text

    # benchmarks/fit.py scores a unit's final checkpoint as the job did: its English test accuracy is the stored one
    fit = load_benchmark("fit").unit_fit(tmp_path / "runs" / "smoke" / "ce-seed0")
    assert fit["test"] == units["ce/seed0"]["acc"]["en"] and fit["test_rows"] == 16
    assert fit["train_rows"] == 16 and 0 <= fit["train"] <= 1


RUN = {"minutes": 1.5, "finished": "2026-11-25T18:00:00", "load": 1.0, "cpu": "CPU A"}  # what the runner adds


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` as a module (benchmarks/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def load_fidelity():
    return load_benchmark("fidelity")


def never(seed, storage):
    """A variant's runner in tests that only report: a report runs nothing."""
    raise AssertionError("a report runs nothing")


def test_a_section_tables_every_score_and_tests_each_claim_on_its_own_items(tmp_path):
    from xlt.eval.stats import paired_bootstrap, seed_item_bootstrap

    fidelity = load_fidelity()
    a_ret = ["1111111100", "1111111110", "1111111111"]  # retrieval hits of A over 10 queries, per seed
    b_ret = ["1111100000", "1111100000", "1111110000"]

    def unit(variant, seed, acc_items, ret_items, f1):
        return {"variant": variant, "seed": seed, "source": "en", **RUN,
                "acc": {"en": 1.0, "de": acc_items.count("1") / 4, "avg_target": acc_items.count("1") / 4},
                **fidelity.scored_items([(f"de/{i}", c == "1") for i, c in enumerate(acc_items)]),
                "metrics": {"ret": {"values": {"avg": ret_items.count("1") / 10},
                                    **fidelity.scored_items([(f"q{i}", c == "1") for i, c in enumerate(ret_items)])},
                            "mine": {"values": {"F1": f1}}}}

    units = {f"a/seed{s}": unit("a", s, "1100", a_ret[s], 0.5 + 0.1 * s) for s in range(3)}
    units |= {f"b/seed{s}": unit("b", s, "1010", b_ret[s], 0.2) for s in range(3)}

    comparison = fidelity.Comparison(
        "t", "T", "settings", (fidelity.Variant("a", "A", never), fidelity.Variant("b", "B", never)),
        (("a", "b", "+1 acc"), ("a", "b", "+2 ret", "ret")),
        metrics=(("ret", "Retrieval"), ("mine", "Mining")))
    text = fidelity.section(comparison, units, tmp_path / "t.png")

    assert "| A       | 3     | 0.900 ± 0.100 |" in text  # retrieval avg of A: 0.8, 0.9, 1.0
    assert "| A       | 3     | 0.600 ± 0.100 |" in text  # mining F1 of A: 0.5, 0.6, 0.7
    ret = paired_bootstrap([[int(c) for c in items] for items in a_ret],
                           [[int(c) for c in items] for items in b_ret], seed=0)
    acc = paired_bootstrap([[1, 1, 0, 0]] * 3, [[1, 0, 1, 0]] * 3, seed=0)
    assert ret.verdict == "gain" and acc.verdict == "within noise"
    # Over seeds and items too, the seeds drawn together: A and B ran the same seeds
    a_seeds, b_seeds = ([[int(c) for c in items] for items in hits] for hits in (a_ret, b_ret))
    crossed = seed_item_bootstrap(a_seeds, b_seeds, matched=True, seed=0)
    assert str(crossed) != str(seed_item_bootstrap(a_seeds, b_seeds, seed=0))
    assert re.search(rf"\| A − B +\| ret +\| \+2 ret +\| {re.escape(str(ret))} +\| gain +\| "
                     rf"{re.escape(str(crossed))} {crossed.verdict} +\| 10 +\| 3 / 3 +\|", text)
    assert re.search(rf"\| A − B +\| accuracy +\| \+1 acc +\| {re.escape(str(acc))} +\| within noise +\| [^|]+ \| 4 ", text)
    assert "6 units, 9 minutes of runs, finished 2026-11-25T18:00:00 to 2026-11-25T18:00:00" in text
    assert "; on CPU A, 2 cores; rows: evenly spaced strides (before issue 69's seeded draws)." in text
    assert "Not run yet" not in text
    assert "```\npython benchmarks/fidelity.py t --seeds 0 1 2\n```" in text  # reproduces every stored unit

    comparison = fidelity.Comparison("t", "T", "settings", (*comparison.variants, fidelity.Variant("c", "C", never)),
                                     comparison.claims + (("c", "a", "+3 acc"),))
    text = fidelity.section(comparison, units, tmp_path / "t.png")
    assert "Not run yet: C (`python benchmarks/fidelity.py t --seeds 0 1 2 --only c`)." in text
    assert "```\npython benchmarks/fidelity.py t --seeds 0 1 2 --only a b\n```" in text  # what is shown, no more
    assert "C − A" not in text
    assert (tmp_path / "t.png").is_file()
    one = fidelity.section(comparison, {"a/seed0": units["a/seed0"]}, tmp_path / "t.png")
    assert "1 unit, 2 minutes of runs" in one  # 1.5 minutes, rounded
    moved = {**units, "b/seed2": {**units["b/seed2"], "cpu": "CPU B"}}  # a unit run on another machine
    assert "; on CPU A (5 units) and CPU B (1 unit), 2 cores each; rows: " in fidelity.section(comparison, moved,
                                                                                      tmp_path / "t.png")

    # The interval is over items, not seeds: a seeded variant short of three seeds gives a provisional verdict, a
    # deterministic reference (one unit by design) does not
    one_a = {k: v for k, v in units.items() if k not in ("a/seed1", "a/seed2")}
    # ... and it is taken over the seeds both ran: B's seeds 1 and 2, which A did not run, do not count
    one_a |= {f"b/seed{s}": unit("b", s, "0000", b_ret[s], 0.2) for s in (1, 2)}
    seed0 = paired_bootstrap([[1, 1, 0, 0]], [[1, 0, 1, 0]], seed=0)
    assert str(seed0) != str(paired_bootstrap([[1, 1, 0, 0]], [[1, 0, 1, 0], [0] * 4, [0] * 4], seed=0))
    assert re.search(rf"\| A − B +\| \+1 acc +\| {re.escape(str(seed0))} +\| within noise \(provisional: 1 seed\) +\| "
                     rf"[^|]+ \| 4 +\| 1 / 3 \(paired on seed 0\) +\|",
                     fidelity.section(comparison, one_a, tmp_path / "t.png"))
    reference = fidelity.Comparison("t", "T", "settings", (comparison.variants[0],
                                                           fidelity.Variant("b", "B", never, seeded=False)),
                                    comparison.claims[:1])
    one_b = {k: v for k, v in units.items() if k not in ("b/seed1", "b/seed2")}
    assert re.search(r"\| A − B +\| \+1 acc +\| .+ \| within noise +\| [^|]+ \| 4 +\| 3 / 1 +\|",
                     fidelity.section(reference, one_b, tmp_path / "t.png"))


def test_a_single_seed_shows_its_value_without_a_spread():
    fidelity = load_fidelity()

    comparison = fidelity.Comparison("t", "T", "settings", (fidelity.Variant("a", "A", never),
                                                            fidelity.Variant("b", "B", never)), ())
    records = {"a": [{"acc": {"de": 0.5}}], "b": [{"acc": {"de": 0.5}}, {"acc": {"de": 0.7}}]}
    table = fidelity.spread(comparison, records, lambda r: r["acc"], lambda rs: ["de"])
    assert table == [{"variant": "A", "seeds": 1, "de": "0.500"},
                     {"variant": "B", "seeds": 2, "de": "0.600 ± 0.141"}]


def test_the_report_names_every_comparison_not_run_yet_with_its_command(tmp_path):
    fidelity = load_fidelity()
    text = fidelity.report({"units": {"scl-xnli": {}}}, tmp_path / "fidelity.md")

    not_run = text.split("## Not run yet", 1)[1]
    for name in set(fidelity.COMPARISONS) - {"smoke"}:
        assert f"`python benchmarks/fidelity.py {name} --seeds 0 1 2`" in not_run
    assert "fidelity.py smoke" not in text


def test_fresh_forgets_one_comparison_its_units_and_its_runs(tmp_path):
    fidelity = load_fidelity()
    store_path, storage = tmp_path / "fidelity.json", tmp_path / "runs"
    fidelity.save_store(store_path, {"units": {"a": {"ce/seed0": RUN}, "b": {"ce/seed0": RUN}}})
    for name in ("a", "b"):
        (storage / name / "ce-seed0" / "checkpoint_000001").mkdir(parents=True)

    fidelity.drop_comparison("a", store_path, storage)
    assert fidelity.load_store(store_path) == {"units": {"b": {"ce/seed0": RUN}}}
    assert not (storage / "a").exists() and (storage / "b" / "ce-seed0" / "checkpoint_000001").is_dir()
    fidelity.drop_comparison("a", store_path, storage)  # nothing left to drop
    assert fidelity.load_store(store_path) == {"units": {"b": {"ce/seed0": RUN}}}



def test_units_on_strides_are_not_paired_with_units_on_seeded_draws(tmp_path):
    """Units stored before issue 69 took evenly spaced rows: a section names that, and a comparison
    holding them runs nothing more until it is run again whole (--fresh)."""
    fidelity = load_fidelity()
    store_path = tmp_path / "fidelity.json"
    fidelity.save_store(store_path, {"units": {"smoke": {"ce/seed0": {**RUN, "variant": "ce", "seed": 0}}}})
    with pytest.raises(SystemExit, match=r"smoke: its stored units were measured on evenly spaced strides .* --fresh"):
        fidelity.run_comparison(fidelity.COMPARISONS["smoke"], [0, 1], store_path, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_a_unit_killed_and_continued_counts_its_minutes_up_to_the_checkpoint_it_continued_from(tmp_path):
    fidelity = load_fidelity()
    store_path, storage = tmp_path / "fidelity.json", tmp_path / "runs"
    calls = []

    def run(seed, out):
        calls.append(seed)
        assert out == storage / "c" / "ce-seed0"
        (out / f"epoch{len(calls):03d}").mkdir(parents=True)
        if len(calls) == 1:  # its first epoch's checkpoint written 2 minutes in, then killed
            at = fidelity.load_store(store_path)["started"]["c"]["ce/seed0"]["at"]
            for path in out.rglob("*"):
                os.utime(path, (at + 120, at + 120))
            # another unit that ran in between wrote later: not this unit's minutes
            (storage / "c" / "cl-seed0").mkdir()
            os.utime(storage / "c" / "cl-seed0", (at + 3600, at + 3600))
            raise KeyboardInterrupt
        return {"acc": {"avg_target": 0.5}, "items": "1", "items_digest": "d"}

    comparison = fidelity.Comparison("c", "title", "settings", (fidelity.Variant("ce", "CE", run),), ())
    with pytest.raises(KeyboardInterrupt):
        fidelity.run_comparison(comparison, [0], store_path, storage)
    assert "ce/seed0" not in fidelity.load_store(store_path)["units"]["c"]

    store = fidelity.run_comparison(comparison, [0], store_path, storage)
    assert 2.0 <= store["units"]["c"]["ce/seed0"]["minutes"] < 2.1  # the 2 minutes, and the seconds since
    assert store["started"] == {"c": {}} and fidelity.load_store(store_path) == store
    fidelity.drop_comparison("c", store_path, storage)
    assert fidelity.load_store(store_path) == {"units": {}, "started": {}}

    # Its checkpoints gone (a new checkout without results/), a unit starts over: an hour of earlier runs
    # that left nothing to continue from is not its time
    fidelity.save_store(store_path, {"units": {}, "started": {"c": {"ce/seed0": {"minutes": 50.0,
                                                                               "at": time.time() - 3600}}}})
    store = fidelity.run_comparison(comparison, [0], store_path, storage)
    assert store["units"]["c"]["ce/seed0"]["minutes"] < 0.1


def smoke_overrides(path) -> list[str]:
    """A smoke preset as dotted ``--set`` overrides (its mappings flattened)."""
    from xlt.config import read_yaml

    def flat(prefix, value):
        if isinstance(value, dict):
            return [o for key, inner in value.items() for o in flat(f"{prefix}{key}.", inner)]
        return [f"{prefix[:-1]}={value}"]

    return flat("", read_yaml(path))


def test_the_learners_of_a_cotraining_run_share_it_and_are_read_at_its_end(ray_cluster, data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("XLT_DATA_DIR", str(data_dir))
    fidelity = load_fidelity()
    overrides = (*smoke_overrides(REPO / "configs" / "cotrain_smoke.yaml"), "task.target_langs=[jv, su]",
                 "data.labeled_fraction=0.5")
    lm = fidelity.cotrain("lm-co", "LM", "co", "lm", "cotrain_nusax.yaml", *overrides)
    emb = fidelity.cotrain("emb-co", "emb", "co", "emb", "cotrain_nusax.yaml", *overrides)
    assert lm.directory(0) == emb.directory(0) == "co-seed0"
    first = lm.run(0, tmp_path / "co-seed0")
    state = (tmp_path / "co-seed0" / "state.json").stat().st_mtime_ns
    second = emb.run(0, tmp_path / "co-seed0")
    assert (tmp_path / "co-seed0" / "state.json").stat().st_mtime_ns == state  # read, not run again
    for record in (first, second):
        assert len(record["iterations"]) == 3  # iterations 0, 1 and 2
        assert record["labeled"] > 0 and set(record["acc"]) == {"en", "jv", "su", "avg_target"}
        assert len(record["items"]) == 24  # 12 test rows of each target
        assert record["acc"]["avg_target"] == record["items"].count("1") / 24
        # the last fit's predictions are what the loop's history reports for that iteration
        assert record["acc"]["avg_target"] == pytest.approx(record["iterations"][-1])
    assert first["items_digest"] == second["items_digest"]


def test_cotraining_sections_table_every_iteration(tmp_path):
    fidelity = load_fidelity()

    def unit(variant, seed, iterations):
        return {"variant": variant, "seed": seed, "source": "en", "iterations": iterations, **RUN,
                "acc": {"en": 1.0, "jv": iterations[-1], "avg_target": iterations[-1]},
                **fidelity.scored_items([("jv/0", True)])}

    units = {"alone/seed0": unit("alone", 0, [0.5]), "alone/seed1": unit("alone", 1, [0.7]),
             "co/seed0": unit("co", 0, [0.5, 0.6, 0.8]), "co/seed1": unit("co", 1, [0.7, 0.6, 0.6])}
    variants = tuple(fidelity.Variant(name, name.upper(), lambda seed, storage: {}) for name in ("alone", "co"))
    text = fidelity.section(fidelity.Comparison("c", "C", "", variants, ()), units, tmp_path / "c.png")
    table = text.split("### Target average after each iteration (mean ± std over seeds)")[1]
    assert re.search(r"\| ALONE +\| 2 +\| 0\.600 ± 0\.141 +\| – +\| – +\|", table)
    assert re.search(r"\| CO +\| 2 +\| 0\.600 ± 0\.141 +\| 0\.600 ± 0\.000 +\| 0\.700 ± 0\.141 +\|", table)
