"""Records and readers: every data source becomes ``Example`` / ``ParallelPair`` lists.

Readers validate at read time and report malformed input as ``DataError`` (``file:line:``).
Language codes are normalised once, by ``normalize_lang``. ``to_ray_dataset`` hands a
list of records to Ray Data.
"""

from __future__ import annotations

from xlt.data.bucc import BuccCorpus, read_bucc
from xlt.data.dictionary import BilingualDictionary, Lexicon, read_muse
from xlt.data.errors import DataError
from xlt.data.files import read_parallel
from xlt.data.hf import read_hf_parallel
from xlt.data.ntrex import ntrex_languages, read_ntrex
from xlt.data.paths import resolve_data_dir
from xlt.data.ray_data import to_ray_dataset
from xlt.data.records import Example, ParallelPair, as_rows, evenly_spaced
from xlt.data.sib200 import read_sib200, sib200_labels, sib200_languages
from xlt.data.tatoeba import read_tatoeba, tatoeba_languages

__all__ = [
    "evenly_spaced",
    "BilingualDictionary",
    "BuccCorpus",
    "DataError",
    "Example",
    "Lexicon",
    "ParallelPair",
    "as_rows",
    "read_bucc",
    "read_hf_parallel",
    "read_muse",
    "read_ntrex",
    "ntrex_languages",
    "read_parallel",
    "read_sib200",
    "read_tatoeba",
    "resolve_data_dir",
    "sib200_labels",
    "sib200_languages",
    "tatoeba_languages",
    "to_ray_dataset",
]
