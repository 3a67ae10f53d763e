"""The process pool of every sweep in study/: the runner's suites, the OpInfo sweep (T4), the
model-coverage runs (T3) and the simulated H200 rows (F6).

Workers are forked from the caller, so the task function and whatever it closes over (an
OpInfo, a registry of workloads) need not be picklable; tasks and results travel through pipes
and must be. Each worker runs `initializer(*initargs)` once and then takes tasks one at a time;
with `fresh=True` every task gets a process of its own, forked from the caller's state with
nothing left over from an earlier task. Only the caller sees results (only it writes rows).

`run_pool` yields a `Done` per task as tasks finish. Its `error` is the task's own exception, or:
  WorkerDied  the worker exited (os._exit, a signal, the OOM killer, a failed initializer)
              before reporting; it is replaced, or with `stop_on_death` no task is started
              after it (those still running are collected)
  TimedOut    the task ran longer than `timeout` seconds: its worker is killed and replaced
  NotStarted  the pool stopped starting tasks: `budget_s` seconds had passed, or a worker died
              under `stop_on_death`
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any


class WorkerDied(Exception):
    """The worker running a task died; the task's result, if any, is lost."""


class TimedOut(Exception):
    """The task ran past the pool's per-task timeout; its worker was killed."""


class NotStarted(Exception):
    """The pool stopped before starting the task (time budget spent, or a worker died)."""


@dataclass
class Done:
    task: Any
    value: Any = None
    error: BaseException | None = None
    wall_s: float = 0.0  # from handing the task to a worker to its result (or its end)


def _portable(e: BaseException) -> BaseException:
    """The exception itself when it survives pickling, else a RuntimeError saying what it was."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - anything that cannot cross the pipe
        return RuntimeError(f"{type(e).__name__}: {e}")


def _send(conn: Connection, msg: tuple[str, Any]) -> None:
    try:
        conn.send(msg)
    except Exception as e:  # noqa: BLE001 - a result that cannot be pickled
        conn.send(("error", RuntimeError(f"result could not be sent: {type(e).__name__}: {e}")))


def _worker(conn: Connection, inherited: list[Connection], fn: Callable[[Any], Any],
            initializer: Callable[..., Any] | None, initargs: tuple, fresh: bool) -> None:
    for c in inherited:  # the caller's ends of the other workers' pipes: not ours to hold open
        c.close()
    init_error = None
    try:
        if initializer is not None:
            initializer(*initargs)
    except BaseException as e:  # noqa: BLE001 - reported with the first task
        init_error = _portable(e)
    try:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                break  # the caller is gone
            if task is None:
                break
            if init_error is not None:
                _send(conn, ("init_error", init_error))
                break
            try:
                msg = ("ok", fn(task))
            except BaseException as e:  # noqa: BLE001 - the task's failure is its result
                msg = ("error", _portable(e))
            _send(conn, msg)
            if fresh:
                break
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        # no interpreter shutdown: threads a library left running must not keep the process alive
        os._exit(0)


class _Slot:
    def __init__(self, ctx: Any, fn: Callable, initializer: Callable | None, initargs: tuple, fresh: bool,
                 others: list[Connection]):
        self.initargs = initargs
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker, args=(child, others, fn, initializer, initargs, fresh))
        self.proc.start()
        child.close()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(5)
        self.kill()


def run_pool(fn: Callable[[Any], Any], tasks: Iterable[Any], workers: int, *,
             initializer: Callable[..., Any] | None = None, initargs: tuple = (), timeout: float | None = None,
             budget_s: float | None = None, fresh: bool = False, stop_on_death: bool = False,
             poll_s: float = 0.2, initargs_for: Callable[[Any], tuple] | None = None) -> Iterator[Done]:
    """Run fn(task) for every task in at most `workers` forked processes; yield a Done per task,
    in the order they finish. Closing the generator kills the workers.

    `initargs_for(task)`: the initializer's arguments a task needs (instead of `initargs`, one
    set for every worker). A worker only takes tasks of the arguments it was started with: an
    idle worker takes the first pending task of its arguments, else it is stopped and a worker
    with the next task's arguments takes its place. So tasks of several configurations share
    the workers, and no worker idles while one configuration's last long task runs."""
    pending = deque(tasks)
    if not pending:
        return
    ctx = multiprocessing.get_context("fork")
    n = max(1, min(workers, len(pending)))
    idle: list[_Slot] = []
    busy: dict[Connection, tuple[_Slot, Any, float]] = {}
    t_start = time.perf_counter()
    stopping = False
    args_of: Callable[[Any], tuple] = initargs_for or (lambda _task: initargs)

    def spawn(args: tuple) -> _Slot:
        others = [s.conn for s in idle] + list(busy)
        return _Slot(ctx, fn, initializer, args, fresh, others)

    def take() -> tuple[_Slot, Any]:
        """An idle worker and a pending task it can run (a new worker when none can)."""
        if initargs_for is None:
            return (idle.pop() if idle else spawn(initargs)), pending.popleft()
        for i, slot in enumerate(idle):
            for j, task in enumerate(pending):
                if args_of(task) == slot.initargs:
                    del idle[i]
                    del pending[j]
                    return slot, task
        task = pending.popleft()
        if idle:
            idle.pop().stop()  # its configuration has no task left
        return spawn(args_of(task)), task

    try:
        while pending or busy:
            if pending and (stopping or (budget_s is not None and time.perf_counter() - t_start >= budget_s)):
                why = "a worker died" if stopping else f"time budget of {budget_s:g} s spent"
                while pending:
                    yield Done(pending.popleft(), error=NotStarted(why))
                continue
            while pending and len(busy) < n:
                slot, task = take()
                busy[slot.conn] = (slot, task, time.perf_counter())
                try:
                    slot.conn.send(task)
                except OSError:
                    pass  # the worker is already gone: its end of the pipe reports it below
            for conn in wait(list(busy), timeout=poll_s):
                slot, task, t0 = busy.pop(conn)
                try:
                    kind, payload = conn.recv()
                except (EOFError, OSError):
                    slot.proc.join(5)
                    kind, payload = "died", f"worker exited with code {slot.proc.exitcode} before reporting"
                wall = time.perf_counter() - t0
                if kind not in ("ok", "error"):
                    slot.kill()
                elif fresh:
                    slot.stop()  # its one task is done
                else:
                    idle.append(slot)
                if kind == "ok":
                    yield Done(task, value=payload, wall_s=wall)
                elif kind == "error":
                    yield Done(task, error=payload, wall_s=wall)
                else:
                    stopping = stopping or stop_on_death
                    why = payload if kind == "died" else f"worker initializer failed: {type(payload).__name__}: {payload}"
                    yield Done(task, error=WorkerDied(why), wall_s=wall)
            if timeout is not None:
                now = time.perf_counter()
                for conn, (slot, task, t0) in list(busy.items()):
                    if now - t0 > timeout:
                        del busy[conn]
                        slot.kill()
                        yield Done(task, error=TimedOut(f"no result within {timeout:g} s"), wall_s=now - t0)
    finally:
        for slot in idle:
            slot.stop()
        for slot, _task, _t0 in busy.values():
            slot.kill()
