# The clean CUDA 13 set plus flash-attn and unsloth (gotcha G2): flash-attn's metadata and Python
# package are present, its CUDA extension is not loadable here.
ARG BASE=envcheck-test/py:3.11
FROM ${BASE}
COPY site-packages/ /usr/local/lib/python3.11/dist-packages/
