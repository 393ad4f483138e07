"""Records and format readers: every file becomes rows, ``Example`` / ``ParallelPair`` lists or a corpus.

Readers validate at read time and report malformed input as ``DataError`` (``file:line:``).
Language codes are normalised once, by ``normalize_lang``. No reader here names a dataset: where a
dataset's files are and what its quirks are is configuration (``xlt.tasks``, presets in
``configs/``). ``to_ray_dataset`` hands a list of records to Ray Data.
"""

from __future__ import annotations

from xlt.data.dictionary import BilingualDictionary, Lexicon, read_muse
from xlt.data.errors import DataError
from xlt.data.files import read_parallel
from xlt.data.hf import read_hf_parallel
from xlt.data.mining import MiningCorpus, read_mining
from xlt.data.paths import resolve_data_dir
from xlt.data.ray_data import to_ray_dataset
from xlt.data.records import Example, ParallelPair, as_rows
from xlt.data.sample import sample

__all__ = [
    "BilingualDictionary",
    "DataError",
    "Example",
    "Lexicon",
    "MiningCorpus",
    "ParallelPair",
    "as_rows",
    "read_hf_parallel",
    "read_mining",
    "read_muse",
    "read_parallel",
    "resolve_data_dir",
    "sample",
    "to_ray_dataset",
]
