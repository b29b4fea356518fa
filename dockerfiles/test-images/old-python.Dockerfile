# A real CPython 3.8.18 (copied from this machine's pyenv build into envcheck-test/py:3.8) with an
# installed site-packages tree: too old for the collector (needs 3.10).
ARG BASE=envcheck-test/py:3.8
FROM ${BASE}
COPY site-packages/ /usr/local/lib/python3.8/site-packages/
