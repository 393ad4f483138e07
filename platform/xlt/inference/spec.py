"""``ClassifierSpec``: a trained ``Classifier`` in a form that can travel to inference actors.

A ``Classifier`` is an ``nn.Module`` holding a tokenizer and hundreds of MB of weights; pickling
it into every actor's constructor arguments would copy it through the driver once per actor
and tie the actors to the driver's torch/transformers objects. A spec instead names how to
*rebuild* it: the encoder's ``EncoderConfig`` (each actor loads the backbone and tokenizer
itself, from the same source), the label names, and where the ``state_dict`` is:

- a ``ray.ObjectRef`` (``share_classifier(clf, cfg)``): the tensors are put once into the
  object store, and Ray moves them to whichever node an actor runs on. Nothing needs a shared
  filesystem; the object lives as long as the driver holds the spec;
- a path (``share_classifier(clf, cfg, path=...)``, or a fine-tuning checkpoint's ``model.pt`` with
  the frozen names it leaves out as ``from_source``: ``xlt.engine.checkpoints.read_model``): every
  node must be able to read it (local disk of a one-node cluster, NFS, a mounted bucket);
- ``None``: a fresh head, initialised from ``model.seed`` so that every actor builds the same
  one. Only for tests and throughput measurements, where label quality is irrelevant.

Ray resolves ``ObjectRef``s passed as top-level task/actor arguments, not those nested inside
another object such as this dataclass: ``build_classifier`` calls ``ray.get`` itself.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ..models import Classifier, EncoderConfig, load_encoder
from ..models.classifier import build_classifier_over
from ..storage import fetched, is_uri

if TYPE_CHECKING:
    import ray


@dataclass(frozen=True)
class ClassifierSpec:
    """How to rebuild a ``Classifier`` anywhere: encoder config, label names, state dict location.

    Args:
        model: the encoder's ``EncoderConfig`` (the one the classifier was built with).
        labels: label names in the head's output order (``Classifier.labels``).
        state: the classifier's ``state_dict`` (encoder and head) as a path to a ``torch.save``d
            file readable on every node, a ``ray.ObjectRef`` to it in the object store, or
            ``None`` for a fresh head (tests, throughput).
        paired: the classifier reads ``(text, text_pair)`` items (``Classifier.paired``).
        from_source: the names of the frozen parameters ``state`` leaves out, which the encoder
            loaded from ``model.source`` already holds (a checkpoint's: ``xlt.models.load_trained``).
        normalize, languages: the classifier's features normalised, and centred on each of these
            languages' means (``Classifier``: an exported probe's); its predictions need each row's ``lang``.
        input_means: ``(language, mean)`` of languages the classifier was not centred on, each centred on its
            rows' mean in the input it labels (``Classifier.add_languages``; ``xlt.predict.centring``).
        onnx: the ONNX file its encoder's backbone runs from, on onnxruntime (``xlt.models.onnx_backbone``; a path
            or URI every node can read, as ``state``); ``None``: PyTorch.
    """

    model: EncoderConfig
    labels: tuple[str, ...]
    state: str | ray.ObjectRef | None = None
    paired: bool = False
    from_source: tuple[str, ...] = ()
    normalize: bool = False
    languages: tuple[str, ...] = ()
    input_means: tuple[tuple[str, tuple[float, ...]], ...] = ()
    onnx: str | None = None

    @property
    def known_languages(self) -> tuple[str, ...]:
        """The languages it centres: its own and those centred on the input."""
        return self.languages + tuple(lang for lang, _ in self.input_means)

    def __post_init__(self) -> None:
        if not isinstance(self.model, EncoderConfig):
            raise TypeError(f"ClassifierSpec.model must be an EncoderConfig, got {type(self.model).__name__}")
        labels = tuple(self.labels)
        if len(labels) < 2 or len(set(labels)) != len(labels) or not all(isinstance(x, str) for x in labels):
            raise ValueError(f"ClassifierSpec.labels must be at least two distinct strings, got {list(labels)}")
        object.__setattr__(self, "labels", labels)  # a list would make the frozen spec unhashable
        object.__setattr__(self, "from_source", tuple(self.from_source))
        object.__setattr__(self, "languages", tuple(self.languages))
        object.__setattr__(self, "input_means", tuple((lang, tuple(mean)) for lang, mean in self.input_means))
        if isinstance(self.state, Path):
            object.__setattr__(self, "state", str(self.state))
        if self.state is not None and not isinstance(self.state, str):
            import ray

            if not isinstance(self.state, ray.ObjectRef):
                raise TypeError("ClassifierSpec.state must be a path (str), a ray.ObjectRef to a state dict, or "
                                f"None; got {type(self.state).__name__}")


def share_classifier(classifier: Classifier, model: EncoderConfig, *,
                     path: str | Path | None = None) -> ClassifierSpec:
    """A spec of ``classifier`` that inference actors on any node can load.

    Without ``path`` the ``state_dict`` (moved to CPU) is ``ray.put`` into the object store: the
    spec is then valid while this process holds it and Ray is running. With ``path`` it is
    written there with ``torch.save`` instead (parents created): it outlives the Ray session,
    but every node that runs an actor must be able to read the path.

    ``model`` must be the config ``classifier``'s encoder was loaded from: a module does not
    know its source, and a mismatch surfaces as a state-dict error in ``build_classifier``.
    """
    state = {name: tensor.detach().cpu() for name, tensor in classifier.state_dict().items()}
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state, path)
        return ClassifierSpec(model, tuple(classifier.labels), str(path), classifier.paired,
                              normalize=classifier.normalize, languages=tuple(classifier.languages))
    import ray

    return ClassifierSpec(model, tuple(classifier.labels), ray.put(state), classifier.paired,
                          normalize=classifier.normalize, languages=tuple(classifier.languages))


def load_state(spec: ClassifierSpec) -> dict[str, torch.Tensor] | None:
    """The state dict a spec points at, on CPU; ``None`` for a fresh head."""
    if spec.state is None:
        return None
    if isinstance(spec.state, str) and is_uri(spec.state):  # a run's record on a store names its state there
        with fetched(spec.state) as local:
            if local is None:
                raise FileNotFoundError(f"classifier state {spec.state!r} does not exist")
            return load_state(dataclasses.replace(spec, state=str(local)))
    if isinstance(spec.state, str):
        if not Path(spec.state).is_file():
            raise FileNotFoundError(f"classifier state {spec.state!r} does not exist on this node; a path in a "
                                    "ClassifierSpec must be readable wherever an actor runs (shared storage), "
                                    "or use share_classifier(classifier, model) to ship it via the object store")
        if spec.state.endswith(".safetensors"):  # an export's head (xlt.models.classifier)
            from safetensors.torch import load_file

            return load_file(spec.state)
        return torch.load(spec.state, map_location="cpu", weights_only=True)
    import ray

    return ray.get(spec.state)  # nested in a dataclass, so Ray did not resolve it for us


def build_classifier(spec: ClassifierSpec) -> Classifier:
    """Rebuild the classifier ``spec`` describes, on CPU, in eval mode (strict state-dict load). A fresh head
    (``state`` ``None``) is drawn from ``model.seed``, so that every actor of a pool builds the same one."""
    try:
        classifier = build_classifier_over(load_encoder(spec.model), spec.labels, paired=spec.paired,
                                           normalize=spec.normalize, languages=spec.languages, state=load_state(spec),
                                           from_source=spec.from_source, seed=spec.model.seed)
    except RuntimeError as e:
        raise ValueError(f"the state dict in {_where(spec.state)} does not fit a Classifier over "
                         f"{spec.model.source!r} with {len(spec.labels)} labels: was the spec built with the "
                         f"classifier's own EncoderConfig and labels? {e}") from e
    if spec.input_means:
        classifier.add_languages(dict(spec.input_means))
    if spec.onnx is not None:
        from ..models.onnx_backbone import use_onnx

        with fetched(spec.onnx) as local:
            if local is None:
                raise FileNotFoundError(f"ONNX file {spec.onnx!r} does not exist")
            use_onnx(classifier.encoder, local)
    return classifier.eval()


def _where(state: Any) -> str:
    return repr(state) if isinstance(state, str) else "the object store"
