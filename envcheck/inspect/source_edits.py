"""Build lines (``sed -i``, ``perl -pi``, ``python -c``) that edit out vLLM's start-up free-memory check:
``vllm/v1/worker/gpu_worker.py`` refuses to start when ``self.init_snapshot.free_memory <
self.requested_memory`` ("Free memory on device ... is less than desired GPU memory utilization"), and its
profiling asserts ``init_snapshot.free_memory >= free_gpu_memory`` (older: ``init_gpu_memory``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

_CHECK_TEXT = re.compile(
    r"init_snapshot\.free_memory|requested_memory|free_gpu_memory|init_gpu_memory"
    r"|Free memory on device|less than desired GPU memory utili[sz]ation"
)
# InstallCommand.options marker of such a line (the sources record it; G6 reports it).
VLLM_FREE_MEMORY_CHECK_EDIT = "disables_vllm_free_memory_check"
_EDITORS = re.compile(r"(?:g?sed|perl|python(?:\d+(?:\.\d+)?)?)")


def disables_vllm_free_memory_check(argv: Sequence[str]) -> bool:
    if not argv:
        return False
    exe = argv[0].rsplit("/", 1)[-1]
    if not _EDITORS.fullmatch(exe):
        return False
    if exe.startswith("python"):
        if "-c" not in argv[1:]:
            return False
    elif not any(w == "-i" or w.startswith(("-i", "--in-place")) or (w.startswith("-") and not w.startswith("--") and "i" in w)
                 for w in argv[1:]):
        return False  # sed/perl without -i prints the edited text; the file stays as it was
    return any(_CHECK_TEXT.search(word) for word in argv[1:])
