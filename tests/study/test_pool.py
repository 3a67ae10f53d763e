"""study/pool.py, the one process pool of the runner and the side scripts."""
from __future__ import annotations

import os
import time

from study.pool import NotStarted, TimedOut, WorkerDied, run_pool

_STATE: dict = {}


def _init(tag: str) -> None:
    _STATE["tag"] = tag


def test_results_come_back_from_configured_workers_that_are_reused():
    local = {"k": 10}  # a closure: the task function is inherited through fork, never pickled
    done = list(run_pool(lambda x: (x + local["k"], _STATE.get("tag"), os.getpid()), range(6), 2,
                         initializer=_init, initargs=("ready",)))
    assert sorted(d.task for d in done) == list(range(6)) and all(d.error is None for d in done)
    assert sorted(d.value[0] for d in done) == list(range(10, 16))
    assert {d.value[1] for d in done} == {"ready"}
    assert len({d.value[2] for d in done}) <= 2 and os.getpid() not in {d.value[2] for d in done}
    assert "tag" not in _STATE  # the caller's state is untouched


def test_fresh_gives_every_task_a_process_of_its_own():
    done = list(run_pool(lambda x: os.getpid(), range(4), 2, fresh=True))
    assert len({d.value for d in done}) == 4


def test_a_task_exception_is_its_result():
    class Unpicklable(Exception):
        def __reduce__(self):
            raise TypeError("no")

    def task(x):
        if x == 1:
            raise ValueError("bad input")
        if x == 2:
            raise Unpicklable("local class")
        return x

    done = {d.task: d for d in run_pool(task, range(4), 2)}
    assert isinstance(done[1].error, ValueError) and str(done[1].error) == "bad input"
    assert isinstance(done[2].error, RuntimeError) and "Unpicklable" in str(done[2].error)
    assert done[0].value == 0 and done[3].value == 3


def test_a_hung_task_times_out_and_the_rest_run():
    done = {d.task: d for d in run_pool(lambda x: time.sleep(30) if x == 0 else x, range(3), 2, timeout=1.0,
                                        poll_s=0.05)}
    assert isinstance(done[0].error, TimedOut) and 1.0 <= done[0].wall_s < 10
    assert (done[1].value, done[2].value) == (1, 2)


def test_a_dead_worker_fails_its_task_only_or_stops_the_pool():
    def task(x):
        if x == 1:
            os._exit(3)
        return x

    done = {d.task: d for d in run_pool(task, range(4), 1)}
    assert isinstance(done[1].error, WorkerDied) and "code 3" in str(done[1].error)
    assert [done[i].value for i in (0, 2, 3)] == [0, 2, 3]  # replaced: the rest ran
    done = {d.task: d for d in run_pool(task, range(4), 1, stop_on_death=True)}
    assert done[0].value == 0 and isinstance(done[1].error, WorkerDied)
    assert all(isinstance(done[i].error, NotStarted) for i in (2, 3))


def test_a_failing_initializer_is_a_dead_worker():
    def init():
        raise OSError("no device")

    done = list(run_pool(lambda x: x, [0], 1, initializer=init))
    assert isinstance(done[0].error, WorkerDied) and "initializer failed: OSError: no device" in str(done[0].error)


def test_a_spent_budget_starts_nothing_more():
    done = list(run_pool(lambda x: x, range(3), 2, budget_s=0.0))
    assert [type(d.error) for d in done] == [NotStarted] * 3 and "budget" in str(done[0].error)


def test_tasks_of_several_configurations_share_the_workers():
    # each task runs in a worker initialised with its own configuration's arguments, and the
    # second configuration's tasks run while the first one's long task still runs
    tasks = [("a", 2.0), ("a", 0.0), ("b", 0.0), ("b", 0.0), ("a", 0.0)]
    done = list(run_pool(lambda t: (time.sleep(t[1]), _STATE.get("tag"), os.getpid())[1:], tasks, 2,
                         initializer=_init, initargs_for=lambda t: (t[0],)))
    assert all(d.error is None for d in done) and len(done) == len(tasks)
    assert all(d.value[0] == d.task[0] for d in done)  # the tag the worker was started with
    order = [d.task for d in done]
    assert order[-1] == ("a", 2.0)  # everything else finished while the long task ran
    # one worker of each configuration ran several tasks: workers are reused, not forked per task
    pids = [d.value[1] for d in done if d.task[1] == 0.0]
    assert len(set(pids)) < len(pids)
