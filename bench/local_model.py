"""The local judge model's runtimes on the judges' own prompts: load time, seconds per call,
output tokens per second and peak memory, for transformers over the GGUF file (what
``agentdocket.scorers.judges.local`` runs) and, given an interpreter that has it installed,
llama-cpp-python over the same file.

    python bench/local_model.py [--calls 6] [--max-new-tokens 64] [--threads 1,2]
                                [--llama-python /path/to/venv/bin/python]

Each runtime and thread count runs in a fresh process of its own (its peak memory is the
process's), on the same prompts: the ``answer.reference`` prompts of the demo's first runs,
each asked greedily with the judges' output limit. The first call is a warm-up, left out of
the rates. llama-cpp-python has no wheel on PyPI for this machine: ``pip install
llama-cpp-python`` builds llama.cpp from source (timed apart, see docs/benchmarks.md).

Only the standard library is imported at the top: a llama-cpp-python interpreter runs this
file as its worker without agentdocket installed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _prompts(n: int) -> list[str]:
    """The answer.reference prompts of the demo's first ``n`` distinct questions."""
    sys.path.insert(0, str(ROOT))
    from agentdocket.demo import run_demo
    from agentdocket.scorers.judges.prompts import render
    from agentdocket.store import open_store

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'demo.db'}"
        run_demo(url, spool_dir=Path(tmp) / "spool")
        with open_store(url) as store:
            first: dict[str, str] = {}
            for run in store.reader.list_runs(dataset="concerts-demo", limit=None):
                first.setdefault(run["case_id"], run["trace_id"])
            for trace in store.scoring.traces(sorted(first.values())[:n], None):
                case = trace.case
                assert case is not None and case.reference_answer is not None
                out.append(
                    render(
                        f"reference_{case.question_type or 'conclusive'}",
                        question=case.question or "",
                        gold_answer=case.reference_answer,
                        answer=trace.response or "",
                    )
                )
    return out


def _worker(runtime: str, threads: int, max_new: int, prompts: list[str], weights: str) -> None:
    """Load, ask every prompt, print the figures as JSON (in the worker's own process)."""
    started = time.perf_counter()
    calls: list[tuple[float, int, int, str]] = []
    if runtime == "transformers":
        sys.path.insert(0, str(ROOT))
        from agentdocket.scorers.judges.local import loaded

        model = loaded("smollm2")
        load = time.perf_counter() - started
        for prompt in prompts:
            t = time.perf_counter()
            _, n_in, n_out, cut = model.generate(
                [{"role": "user", "content": prompt}], max_new, 0.0, 0, threads
            )
            calls.append((time.perf_counter() - t, n_in, n_out, "length" if cut else "stop"))
    else:
        from llama_cpp import Llama

        llm = Llama(
            model_path=weights,
            n_ctx=2048,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        load = time.perf_counter() - started
        for prompt in prompts:
            t = time.perf_counter()
            out = llm.create_chat_completion(
                messages=[{"role": "user", "content": prompt}], max_tokens=max_new, temperature=0.0
            )
            usage = out["usage"]
            reason = out["choices"][0]["finish_reason"]
            calls.append(
                (
                    time.perf_counter() - t,
                    usage["prompt_tokens"],
                    usage["completion_tokens"],
                    reason,
                )
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"load_s": load, "calls": calls, "peak_mib": peak}))


def _measure(
    python: str, runtime: str, threads: int, max_new: int, prompts: Path, weights: str
) -> dict[str, Any]:
    args = [python, __file__, "--worker", runtime, "--threads", str(threads)]
    args += ["--max-new-tokens", str(max_new), "--prompts", str(prompts), "--weights", weights]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(args, capture_output=True, text=True, check=True, env=env)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=6, help="prompts asked (the first: warm-up)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--llama-python", help="an interpreter with llama-cpp-python installed")
    parser.add_argument("--worker", choices=["transformers", "llama"], help=argparse.SUPPRESS)
    parser.add_argument("--prompts", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        prompts = json.loads(Path(args.prompts).read_text(encoding="utf-8"))
        _worker(args.worker, int(args.threads), args.max_new_tokens, prompts, args.weights)
        return

    sys.path.insert(0, str(ROOT))
    from agentdocket.scorers.judges.local import weights_path

    weights = str(weights_path("smollm2"))
    with tempfile.TemporaryDirectory() as tmp:
        prompts = Path(tmp) / "prompts.json"
        prompts.write_text(json.dumps(_prompts(args.calls)), encoding="utf-8")
        runtimes = [("transformers", sys.executable)]
        if args.llama_python:
            runtimes.append(("llama", args.llama_python))
        print(
            f"{args.calls} answer.reference prompts, greedy, at most {args.max_new_tokens} "
            "output tokens; the first call is a warm-up"
        )
        print(
            "| runtime | threads | load (s) | s / call | output tokens / s | input tokens / call "
            "| peak memory (MiB) |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for runtime, python in runtimes:
            for threads in (int(t) for t in args.threads.split(",")):
                got = _measure(python, runtime, threads, args.max_new_tokens, prompts, weights)
                timed = got["calls"][1:] or got["calls"]
                seconds = sum(c[0] for c in timed)
                print(
                    f"| {runtime} | {threads} | {got['load_s']:.1f} "
                    f"| {statistics.median(c[0] for c in timed):.2f} "
                    f"| {sum(c[2] for c in timed) / seconds:.1f} "
                    f"| {statistics.mean(c[1] for c in timed):.0f} | {got['peak_mib']:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
