"""The filesystem backends: what is kept as plain files rather than in a database — the L3
archive's blobs (``archive.py``: ``LocalArchive``, the ``Archive`` protocol of
``hermes.memory.archive``), under ``.hermes/archive/``.

Like every engine folder, only ``hermes.storage.open`` builds these (DESIGN.md, "Layers").
"""
