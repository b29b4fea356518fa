# The oldest Python the collector accepts: a real CPython 3.10.13 (this machine's pyenv build, imported
# as envcheck-test/py:3.10) with the clean CUDA 13 site-packages tree.
ARG BASE=envcheck-test/py:3.10
FROM ${BASE}
COPY site-packages/ /usr/local/lib/python3.10/site-packages/
