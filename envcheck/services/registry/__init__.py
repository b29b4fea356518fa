"""The OCI registry service: the distribution client and its auth, the blob cache, layer streams, and
the local image stores (``docker-daemon:``, ``oci-layout:``, ``docker-archive:``)."""
