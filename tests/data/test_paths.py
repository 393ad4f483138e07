from __future__ import annotations

from pathlib import Path

import pytest

from xlt.data.paths import dataset_dir, resolve_data_dir


def test_cli_value_wins_over_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli, env = tmp_path / "cli", tmp_path / "env"
    cli.mkdir()
    env.mkdir()
    monkeypatch.setenv("XLT_DATA_DIR", str(env))
    assert resolve_data_dir(str(cli)) == cli.resolve()
    assert resolve_data_dir() == env.resolve()
    assert resolve_data_dir(None) == env.resolve()


def test_unset_says_how_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # The Makefile exports XLT_DATA_DIR empty when ../shared/data is absent: empty = unset.
    monkeypatch.setenv("XLT_DATA_DIR", "")
    with pytest.raises(FileNotFoundError) as info:
        resolve_data_dir()
    message = str(info.value)
    assert "--data-dir" in message and "XLT_DATA_DIR" in message and "../shared/data" in message


@pytest.mark.parametrize("via_env", [False, True])
def test_missing_directory_names_path_and_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via_env: bool
) -> None:
    missing = str(tmp_path / "nope")
    if via_env:
        monkeypatch.setenv("XLT_DATA_DIR", missing)
    with pytest.raises(FileNotFoundError) as info:
        resolve_data_dir(None if via_env else missing)
    assert missing in str(info.value)
    assert ("XLT_DATA_DIR" if via_env else "--data-dir") in str(info.value)


def test_dataset_dir_accepts_root_or_the_directory(tmp_path: Path) -> None:
    (tmp_path / "sib200").mkdir()
    assert dataset_dir(tmp_path, "sib200") == tmp_path / "sib200"
    assert dataset_dir(tmp_path / "sib200", "sib200") == tmp_path / "sib200"
    with pytest.raises(FileNotFoundError, match="no tatoeba/ directory"):
        dataset_dir(tmp_path, "tatoeba")
