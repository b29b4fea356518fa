"""envcheck: will this Python environment or container work on an NVIDIA DGX Spark?"""

__version__ = "0.1.0"
