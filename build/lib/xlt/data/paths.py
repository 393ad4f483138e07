"""Where the data lives: ``--data-dir``, else ``XLT_DATA_DIR``, else a clear error."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "XLT_DATA_DIR"


def resolve_data_dir(cli_value: str | None = None) -> Path:
    """The data root (the directory holding ``sib200/``, ``tatoeba/``, ``muse/``).

    A command-line value wins over ``$XLT_DATA_DIR``. An empty value counts as unset: the
    Makefile exports ``XLT_DATA_DIR`` empty when ``../shared/data`` does not exist.
    """
    if cli_value:
        source, value = "--data-dir", cli_value
    elif os.environ.get(ENV_VAR):
        source, value = ENV_VAR, os.environ[ENV_VAR]
    else:
        raise FileNotFoundError(
            f"no data directory given: pass --data-dir DIR or set {ENV_VAR}=DIR "
            "(the directory holding sib200/, tatoeba/, muse/). The make targets set "
            f"{ENV_VAR} to ../shared/data when that directory exists beside the checkout."
        )
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"data directory {str(path)!r} (from {source}) does not exist or is not a directory; "
            f"pass --data-dir DIR or set {ENV_VAR}=DIR to an existing directory"
        )
    return path.resolve()


def dataset_dir(root: str | Path, name: str) -> Path:
    """``root/name`` for a data root, or ``root`` itself when it already is that directory.

    Accepting both lets callers pass either the data root or, say, ``.../sib200`` directly.
    """
    root = Path(root)
    if (root / name).is_dir():
        return root / name
    if root.name == name and root.is_dir():
        return root
    raise FileNotFoundError(
        f"no {name}/ directory in {str(root)!r}: expected the data root that holds {name}/ "
        f"(set --data-dir or {ENV_VAR}), or the {name}/ directory itself"
    )
