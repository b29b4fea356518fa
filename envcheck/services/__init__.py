"""Clients of the outside services envcheck talks to, one small client each.

Sources ask a service and turn its answers into inventory; checks never import this package. Each
client owns its deadlines, size limits and redaction (see docs/design.md, "Adding a service"):

- ``registry``: the OCI distribution client (auth challenges, retries, verified blobs) and the local
  image stores (``docker-daemon:``, ``oci-layout:``, ``docker-archive:``).
- ``package_index``: the simple API (PEP 503/691), per-file metadata (PEP 658) and HTTP range reads of wheels
  for ``envcheck --resolve``.
"""
