"""Tatoeba parallel sentences (LASER release): ``tatoeba/tatoeba.<xxx>-eng.{<xxx>,eng}``.

Line i of one file is the translation of line i of the other, so the files must have the
same number of lines and no line may be empty: a single missing line would silently pair
every later sentence with the wrong translation.
"""

from __future__ import annotations

import re
from pathlib import Path

from xlt.text.languages import code_among, normalize_lang
from xlt.data.paths import dataset_dir
from xlt.data.records import ParallelPair
from xlt.data.textfile import read_aligned_lines

_PAIR_FILE = re.compile(r"tatoeba\.([a-z]{3})-eng\.eng")


def tatoeba_languages(root: str | Path) -> list[str]:
    """Canonical codes of the languages with a ``tatoeba.<xxx>-eng.eng`` file, sorted."""
    base = dataset_dir(root, "tatoeba")
    codes = []
    for path in sorted(base.iterdir()):
        match = _PAIR_FILE.fullmatch(path.name)
        if match:
            try:
                codes.append(normalize_lang(match.group(1)))
            except ValueError as e:
                raise ValueError(f"{path}: {match.group(1)!r} is not a known language code: {e}") from e
    return sorted(codes)


def read_tatoeba(root: str | Path, lang: str) -> list[ParallelPair]:
    """Pairs ``src`` (``lang``) -> ``tgt`` (English), in file order.

    ``lang`` is any accepted code (``zh``, ``cmn``, ``zho_Hans``). Ids are
    ``tatoeba/<xxx>-eng/<i>`` with ``i`` the 0-based line index, which retrieval
    evaluation uses as the gold match.
    """
    if normalize_lang(lang) == "en":
        raise ValueError("Tatoeba pairs every language with English; pass the non-English language")
    base = dataset_dir(root, "tatoeba")
    codes = [m.group(1) for path in sorted(base.iterdir()) if (m := _PAIR_FILE.fullmatch(path.name))]
    try:  # a file holds a language in whatever scripts it is written in (cmn: both Chinese scripts)
        code = code_among(normalize_lang(lang).split("-")[0], codes, "Tatoeba files")
    except LookupError as e:
        raise FileNotFoundError(f"{base}: {e}; languages present: {', '.join(tatoeba_languages(base)) or 'none'}") from e
    src_path = base / f"tatoeba.{code}-eng.{code}"
    tgt_path = base / f"tatoeba.{code}-eng.eng"
    for path in (src_path, tgt_path):
        if not path.is_file():
            available = ", ".join(tatoeba_languages(base)) or "none"
            raise FileNotFoundError(
                f"{path} does not exist (language {lang!r} -> {code}); languages present: {available}"
            )
    src_lines, tgt_lines = read_aligned_lines(src_path, tgt_path)
    # The file's own language, not the caller's spelling: ``zh-Hant`` also reads ``cmn``,
    # whose sentences are in both scripts, so the pairs are labelled ``zh``.
    src_lang = normalize_lang(code)
    return [
        ParallelPair(id=f"tatoeba/{code}-eng/{i}", src=src, tgt=tgt, src_lang=src_lang, tgt_lang="en")
        for i, (src, tgt) in enumerate(zip(src_lines, tgt_lines, strict=True))
    ]
