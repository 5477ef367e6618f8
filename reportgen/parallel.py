"""Work spread over the machine's cores: an ordered map over forked worker processes.

The workers are forked from the building process, so they see everything it has made so far (the
campaign, its analysis, the template environment) without it being pickled; only an item's index
goes to a worker and only its result comes back. Results come back in the items' order, so what is
built is the same whatever the number of workers.

The map runs in the building process instead when there is one worker, too little work to share,
no safe fork (fork is Linux's here: elsewhere a forked process may hold the locks of threads that
did not follow it), or inside a worker. A worker that fails or dies does not lose the build: its
items are done again in the building process, where an error is raised with its own message.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# Below this many items per worker the fork and the results' pickling cost more than they save.
LEAST_PER_WORKER = 4

_task: tuple[Callable, Sequence] | None = None  # in a worker: what it maps over, inherited at the fork
_in_worker = False
redone = 0  # items given to workers but done here after all (a worker died, a result could not travel back)


class _Failed:
    """An item whose function raised in a worker: done again in the building process."""


def cores() -> int:
    """The cores this process may run on (its affinity where the system says it, else every core)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    return sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()


def workers_for(jobs: int, items: int) -> int:
    """How many workers share `items`: at most `jobs`, each with at least LEAST_PER_WORKER items;
    1 means the building process does the work itself."""
    if jobs <= 1 or _in_worker or not can_fork():
        return 1
    return max(1, min(jobs, items // LEAST_PER_WORKER))


def _started(function: Callable, items: Sequence) -> None:
    """A worker's start: what it maps over comes with the fork (never pickled), as the worker's own, so
    that maps started at once by two threads of one process never take each other's work."""
    global _in_worker, _task
    _in_worker, _task = True, (function, items)
    # A worker lives for one map: collecting the garbage it inherited would touch, and so copy, every
    # page of the building process's memory that it shares.
    gc.disable()


def _run(index: int) -> object:
    function, items = _task
    try:
        return function(items[index])
    except Exception:
        return _Failed()


def ordered_map(function: Callable[[Item], Result], items: Sequence[Item], jobs: int = 1,
                done: Callable[[int, Result], None] | None = None) -> list[Result]:
    """`[function(item) for item in items]`, shared among up to `jobs` workers; `done(index, result)`
    hears of each result in order, in the building process (for progress)."""
    workers = workers_for(jobs, len(items))
    results: list = []

    def keep(result) -> None:
        if isinstance(result, _Failed):
            result = function(items[len(results)])  # raises with its own message, or succeeds here
        results.append(result)
        if done:
            done(len(results) - 1, result)

    if workers > 1:
        gc.freeze()  # what exists now is never collected in the workers, whose pages stay shared
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_started,
                                   initargs=(function, items))
        try:
            returned = pool.map(_run, range(len(items)), chunksize=max(1, len(items) // (workers * 16)))
            while True:
                try:
                    result = next(returned)
                except StopIteration:
                    break
                except (BrokenProcessPool, Exception):  # noqa: BLE001 - a worker died, or its result could not travel
                    break  # what the workers did not return is done here
                keep(result)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            gc.unfreeze()
        global redone
        redone += len(items) - len(results)
    for index in range(len(results), len(items)):
        keep(function(items[index]))
    return results
