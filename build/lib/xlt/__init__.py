"""xlt: cross-lingual transfer experiments on Ray.

The rooms (packages and top-level modules), what each owns and the layers their imports follow are
mapped in ``docs/architecture.md``: from the leaves (``config``, ``metrics``, ``storage``, ...)
through ``text``, ``data``, ``tasks``, ``models``, ``losses``, ``eval`` and the ``engine`` up to the
workloads (``train``, ``pretrain``, ``cotrain``) and ``sweep``.
"""

__version__ = "0.1.0"
