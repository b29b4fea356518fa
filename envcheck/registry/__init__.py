"""Reading images from OCI registries: references, authentication, the distribution client, a cache."""
