# A CUDA 12 environment (gotcha G1): torch 2.8.0+cu128 with nvidia-*-cu12 distributions and a
# gcc-built torch/lib/libc10_cuda.so whose DT_NEEDED names libcudart.so.12.
ARG BASE=envcheck-test/py:3.11
FROM ${BASE}
COPY site-packages/ /usr/local/lib/python3.11/dist-packages/
