"""xlt: cross-lingual transfer experiments on Ray.

Subpackages: ``data`` (records, readers), ``models`` (model sources, encoders, classifier),
``eval`` (per-language metrics, retrieval). See ``../shared/docs/design.md`` for the map.
"""

__version__ = "0.1.0"
