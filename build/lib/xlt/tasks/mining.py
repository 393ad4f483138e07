"""``MiningConfig``: a bitext-mining corpus as configuration (where its sides and gold pairs are).

The format is BUCC 2018's (``xlt.data.mining``); the files of a corpus are a preset under
``configs/mining/`` (``mining: {include: mining/bucc2018.yaml}``). Paths are templates over
``{data_dir}`` (``--data-dir`` / ``$XLT_DATA_DIR``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import check
from ..data.mining import MiningCorpus, read_mining
from ..text.languages import normalized_langs
from .files import fill, placeholders


@dataclass(frozen=True)
class MiningConfig:
    """Sides ``src_path`` (in ``src_lang``) and ``tgt_path`` (in ``tgt_lang``) and the ``gold_path``
    pairs of a corpus named ``name``."""

    name: str = ""
    src_path: str = ""
    tgt_path: str = ""
    gold_path: str = ""
    src_lang: str = ""
    tgt_lang: str = ""

    def __post_init__(self) -> None:
        check(bool(self.name), "name", self.name, "a non-empty name")
        for key in ("src_path", "tgt_path", "gold_path"):
            template = getattr(self, key)
            check(bool(template) and placeholders(template) <= {"data_dir"}, key, template,
                  "a path template with no placeholder but {data_dir}")
        for key in ("src_lang", "tgt_lang"):
            object.__setattr__(self, key, normalized_langs(key, [getattr(self, key)])[0])


def load_mining(cfg: MiningConfig, data_dir: str | Path | None = None) -> MiningCorpus:
    """The corpus of ``cfg``: malformed lines raise ``DataError`` naming the file and line."""
    root = Path(data_dir) if data_dir else None
    return read_mining(*(fill(t, root) for t in (cfg.src_path, cfg.tgt_path, cfg.gold_path)), cfg.src_lang,
                       cfg.tgt_lang)
