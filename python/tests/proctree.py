"""A tree of four real processes for the memory sampler: a ``python3`` root that starts three
sleeping ``python3`` children. The memory tests (test_memory.py) and the memory benchmark
(bench/bench_emitter.py, which puts this folder on its PYTHONPATH) both sample it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

# A root that starts three sleeping children, says so (their pids), and sleeps. Each child
# says when it is up, so that its interpreter is loaded when the sampler reads it.
_TREE = (
    "import subprocess, sys, time\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'import time; print(1, flush=True); time.sleep(%(s)d)'], stdout=subprocess.PIPE) for _ in range(3)]\n"
    "[k.stdout.readline() for k in kids]\n"
    "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
    "time.sleep(%(s)d)\n"
)


def spawn_tree(seconds: int = 30) -> tuple[subprocess.Popen, list[int]]:
    """Starts the tree, every process sleeping ``seconds``, and returns its root and the
    children's pids once all are up."""
    p = subprocess.Popen([sys.executable, "-c", _TREE % {"s": seconds}], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    kids = [int(x) for x in p.stdout.readline().split()]
    return p, kids


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (no process, or a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] == "Z"
    except (OSError, IndexError):
        return True


def kill_tree(p: subprocess.Popen, kids: list[int]) -> None:
    """Kills the children and the root, and waits until the children are gone."""
    for k in kids:
        try:
            os.kill(k, 9)
        except OSError:
            pass
    p.kill()
    p.wait()
    if p.stdout is not None:
        p.stdout.close()
    for k in kids:  # reaped by init; wait until they are gone
        for _ in range(200):
            if gone(k):
                break
            time.sleep(0.01)
