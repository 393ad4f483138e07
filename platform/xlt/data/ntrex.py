"""NTREX-128 (news, multi-way parallel): ``ntrex128/newstest2019-src.eng.txt`` and
``newstest2019-ref.<code>.txt``, line i of every file a translation of English line i.

Codes on disk are ISO 639-3, some with a region (``zho-CN``); a language is found by normalising them
(``zh`` reads ``zho-CN``), and pairs carry the base language (``zh``).
"""

from __future__ import annotations

import re
from pathlib import Path

from xlt.data.paths import dataset_dir
from xlt.data.records import ParallelPair
from xlt.data.textfile import read_aligned_lines
from xlt.text.languages import code_among, normalize_lang

_REF_FILE = re.compile(r"newstest2019-ref\.([A-Za-z-]+)\.txt")
_SOURCE = "newstest2019-src.eng.txt"


def _codes(base: Path) -> dict[str, str]:
    """``base code -> code on disk`` (``zho -> zho-CN``)."""
    return {m.group(1).split("-")[0]: m.group(1) for path in sorted(base.iterdir())
            if (m := _REF_FILE.fullmatch(path.name))}


def ntrex_languages(root: str | Path) -> list[str]:
    """Canonical codes of the languages with a reference file, sorted."""
    return sorted(normalize_lang(code) for code in _codes(dataset_dir(root, "ntrex128")))


def read_ntrex(root: str | Path, lang: str) -> list[ParallelPair]:
    """Pairs ``src`` (``lang``) -> ``tgt`` (English), in file order; ids ``ntrex/<code>/<i>`` (0-based line)."""
    if normalize_lang(lang) == "en":
        raise ValueError("NTREX-128 pairs every language with its English source; pass the non-English language")
    base = dataset_dir(root, "ntrex128")
    codes = _codes(base)
    try:
        short = code_among(normalize_lang(lang).split("-")[0], codes, "NTREX-128 reference files")
    except LookupError as e:
        raise FileNotFoundError(f"{base}: {e}; languages present: {', '.join(ntrex_languages(root)) or 'none'}") from e
    code = codes[short]
    src_lines, tgt_lines = read_aligned_lines(base / f"newstest2019-ref.{code}.txt", base / _SOURCE)
    src_lang = normalize_lang(short)
    return [ParallelPair(id=f"ntrex/{code}/{i}", src=src, tgt=tgt, src_lang=src_lang, tgt_lang="en")
            for i, (src, tgt) in enumerate(zip(src_lines, tgt_lines, strict=True))]
