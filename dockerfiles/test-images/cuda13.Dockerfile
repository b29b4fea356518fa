# A clean CUDA 13 environment: torch 2.14.1 and the nvidia-* CUDA 13 distributions as pip installs
# them (dist-info METADATA/RECORD), with a gcc-built torch/lib/libc10_cuda.so that needs libcudart.so.13.
# Built by tests/docker_images.py from the host-python base (no network, no RUN).
ARG BASE=envcheck-test/py:3.11
FROM ${BASE}
COPY site-packages/ /usr/local/lib/python3.11/dist-packages/
