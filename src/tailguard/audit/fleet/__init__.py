"""Fleet audit: every session log of a deployment, on one machine or a Dask cluster.

``tailguard audit`` in fleet mode (``docs/fleet.md``) expands paths, globs, directories and
fsspec URLs into sessions, audits each with :func:`tailguard.audit.fleet.record.audit_source` (one
pure function shared by every engine), and writes one record per session plus a summary.

Layers, top to bottom: ``engines`` (one process, a local process pool, Dask) run ``record``
over batches of ``sources``; ``summary`` and ``output`` turn the records into text, JSONL and
Parquet. Standard library only at import: fsspec, distributed and pyarrow are imported when
a URL, ``--engine dask`` or a ``.parquet`` output needs them (``pip install 'tailguard[fleet]'``).
"""

from __future__ import annotations

EXTRA = "fleet"  # the optional-dependencies extra that installs fsspec and dask[distributed]

__all__ = ["EXTRA"]
