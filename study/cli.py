"""Command line: list, run, gate, report, reproduce.

    python -m study list [--suite quick]
    python -m study run --suite full [--workload gemm ...] [--chip mtia2i ...] [--regime resident ...] [--workers N] [--engine pool|ray] [--repair]
    python -m study gate [--suite quick|full] [--update] [--fresh]
    python -m study report
    python -m study reproduce [--skip-run] [--workers N] [--engine pool|ray]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

from study.results import RESULTS_DIR, CorruptResultsError

ENGINES = ("pool", "ray")  # study.runner.ENGINES, not imported here: the runner imports torch


def _workloads() -> dict:
    from study.registry import load_all
    return dict(load_all())


def cmd_list(args: argparse.Namespace) -> int:
    from study.suites import SUITES, get_suite, plan
    ws = _workloads()
    if args.suite:
        for j in plan(get_suite(args.suite), ws):
            pairs = ", ".join(f"{i}:{d}" for i, d in j.pairs)
            more = f" (+{len(j.variants)} chips priced from its events)" if j.variants else ""
        print(f"{j.workload:28s} {j.shape:14s} {j.chip:10s} {j.options:20s} {j.regime:10s} {pairs}{more}")
        return 0
    if not ws:
        print("no workloads registered (study/workloads/ is empty)")
    for name, w in sorted(ws.items()):
        impls = ", ".join(i for i in w.impls if i != "torch")
        print(f"{name}  [{w.family}]  dtypes {','.join(w.dtypes)}  impls {impls or '-'}")
        for s in w.shapes:
            print(f"    {s.name:10s} {s.label:40s} {','.join(sorted(s.tags))}")
    print("\nsuites: " + ", ".join(f"{s.name} ({s.description})" for s in SUITES.values()))
    return 0


def _print_summary(s: object) -> None:
    d = dataclasses.asdict(s)
    print(f"{d['suite']}: {d['rows']} rows written to {d['path']} from {d['jobs']} jobs in {d['wall_s']:.1f}s; "
          f"{d['skipped_done']} already measured, {d['not_implemented']} not implemented, {d['incorrect']} incorrect")
    for e in d["errors"]:
        print(f"  error: {e}", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    from study.runner import run_suite
    from study.suites import get_suite
    suite = get_suite(args.suite)
    if args.chip:
        chips = list(args.chip)
        suite = dataclasses.replace(suite, chips=lambda: chips)
    if args.regime:
        from backend.regimes import get_regime
        for r in args.regime:
            get_regime(r)  # an unknown name fails before any work
        suite = dataclasses.replace(suite, regimes=tuple(args.regime))
    s = run_suite(suite, _workloads(), Path(args.results), args.workers,
                  only=set(args.workload) if args.workload else None, repair=args.repair, engine=args.engine)
    _print_summary(s)
    return 1 if s.errors else 0


def cmd_gate(args: argparse.Namespace) -> int:
    from study.gate import expected_path_for, run_gate
    results = Path(tempfile.mkdtemp(prefix="study-gate-")) if args.fresh else Path(args.results)
    expected = Path(args.expected) if args.expected else expected_path_for(args.suite)
    report, text = run_gate(_workloads(), results, expected, update=args.update, workers=args.workers,
                            suite=args.suite)
    for line in report.lines():
        print(line)
    if args.update:
        print(f"wrote {expected}")
        return 0
    if not report.ok:
        print(f"\n--- regenerated {expected} (review, then `python -m study gate --suite {args.suite} --update`) ---")
        print(text, end="")
        return 1
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from study.report import summarise
    print(summarise(Path(args.results)))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from study.reproduce import reproduce
    return reproduce(Path(args.results), workers=args.workers, skip_run=args.skip_run, engine=args.engine)


def _add_engine(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--engine", choices=ENGINES, default="pool",
                    help="pool: forked processes on this machine (default); ray: Ray actors, on a local Ray "
                         "or the cluster named by RAY_ADDRESS (needs the ray extra)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m study", description="Triton on a simulated MTIA 2i: the study harness")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--results", default=str(RESULTS_DIR), help="results folder (raw/, figures/, tables/)")
    sub = p.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("list", parents=[common], help="workloads, implementations and shapes; or a suite's jobs")
    sp.add_argument("--suite")
    sp.set_defaults(fn=cmd_list)
    sp = sub.add_parser("run", parents=[common], help="run (or resume) a suite, appending rows to results/raw/<suite>.csv")
    sp.add_argument("--suite", default="quick")
    sp.add_argument("--workload", action="append", help="only this workload (repeatable)")
    sp.add_argument("--chip", action="append", help="override the suite's chips (repeatable)")
    sp.add_argument("--regime", action="append", help="override the suite's memory regimes: cold, resident, "
                    "writeback (repeatable)")
    sp.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores; 0: in-process)")
    _add_engine(sp)
    sp.add_argument("--repair", action="store_true", help="drop a partial last line left by an interrupted write")
    sp.set_defaults(fn=cmd_run)
    sp = sub.add_parser("gate", parents=[common], help="quick suite vs results/expected.csv (or --suite full)")
    sp.add_argument("--suite", default="quick", choices=("quick", "full"),
                    help="quick: test shapes, what CI runs (default); full: every study shape and dtype")
    sp.add_argument("--update", action="store_true", help="write the regenerated expected file")
    sp.add_argument("--fresh", action="store_true", help="measure into a temporary folder, reusing no rows")
    sp.add_argument("--expected", help="expected file (default results/expected.csv, or expected_<suite>.csv)")
    sp.add_argument("--workers", type=int, default=None)
    sp.set_defaults(fn=cmd_gate)
    sp = sub.add_parser("report", parents=[common], help="summary of results/raw: rows, correctness, geomean speedups")
    sp.set_defaults(fn=cmd_report)
    sp = sub.add_parser("reproduce", parents=[common], help="full study on the default chip, then every notebook")
    sp.add_argument("--workers", type=int, default=None)
    _add_engine(sp)
    sp.add_argument("--skip-run", action="store_true", help="only execute the notebooks")
    sp.set_defaults(fn=cmd_reproduce)
    args = p.parse_args(argv)
    if getattr(args, "engine", "pool") == "ray" and args.workers == 0:
        p.error("--engine ray needs --workers >= 1 (--workers 0 runs in this process)")
    try:
        return args.fn(args)
    except CorruptResultsError as e:
        print(f"error: corrupt results file: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        from study.runner import EngineError  # already imported when it raised one
        if not isinstance(e, EngineError):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2
