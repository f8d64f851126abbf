"""Reproduce Table 3 of the GRAMMAR paper from the authors' published result files.

    python scripts/grammar_table3.py PATH/TO/grammar [--database URL]

PATH is a checkout of the authors' repository (xinzhel/grammar; it has no licence, so
agentdocket ships none of its files). For each benchmark (Aurp, Spider-Closed, Spider-Open) and
text form (short, long, and their balanced versions) it imports
``benchmarks/<benchmark>/eval_results/results_<form>.json`` with the judgement cache
``benchmarks/<benchmark>/SemanticsMatch/<short|long>.json``, scores ``grammar.groups``
(closed-domain for Aurp and Spider-Closed, open-domain for Spider-Open) and prints Table 3's No
Action, Remove Gap Groups and Balance Gap Examples rows beside the paper's figures, saying which
agree to two decimals. The robust text form is the short one (the keyword retrieval under test
is weak on long queries). Exit status 1 when a figure differs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentdocket import scorers  # noqa: E402
from agentdocket.importers.grammar_results import load, read_judgements  # noqa: E402
from agentdocket.scorers.report import build_report, choose_versions  # noqa: E402
from agentdocket.scorers.runner import score_runs  # noqa: E402
from agentdocket.store import Store, open_store  # noqa: E402

BENCHMARKS = {  # folder, closed domain, the paper's figures (robust, non-robust) per row
    "Aurp": ("aurp", True, [(0.27, 0.51), (0.95, 0.96), (0.27, 0.27)]),
    "Spider-Closed": ("spider_closed", True, [(0.26, 0.28), (0.58, 0.44), (0.28, 0.21)]),
    "Spider-Open": ("spider", False, [(0.67, 0.87), (0.98, 0.96), (0.69, 0.68)]),
}
FORMS = ("short", "long", "short_balanced", "long_balanced")
ROWS = ("No Action", "Remove Gap Groups", "Balance Gap Examples")


def metrics(store: Store, root: Path, folder: str, form: str, closed: bool) -> dict[str, Any]:
    bench = root / "benchmarks" / folder
    results = bench / "eval_results" / f"results_{form}.json"
    cache = bench / "SemanticsMatch" / f"{form.removesuffix('_balanced')}.json"
    dataset = f"{folder}-{form}"
    imported = load(results, dataset, agent=dataset, judgements=read_judgements(cache))
    print(f"  {results.relative_to(root)}: {imported.summary()}", flush=True)
    store.import_all([imported.dataset], imported.events)
    scorer = scorers.get("grammar.groups")
    if not closed:
        scorer = scorers.with_options(scorer, {"closed_domain": "false"})
    score_runs(store, [scorer], dataset=dataset, refresh_dashboards=False)
    chosen = choose_versions(
        store.scoring.scorer_versions(dataset), [f"grammar.groups={scorer.version}"]
    )
    report = build_report(
        dataset,
        store.scoring.report_runs(dataset),
        store.scoring.report_verdicts(chosen, dataset),
        None,
    )
    found: dict[str, Any] = report["scorers"]["grammar.groups"]["metrics"]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="the authors' repository")
    parser.add_argument("--database", help="a store (default: a temporary SQLite file)")
    args = parser.parse_args()
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database or f"sqlite:///{Path(tmp) / 'grammar.db'}"
        with open_store(url) as store:
            for name, (folder, closed, paper) in BENCHMARKS.items():
                print(f"{name} ({'closed' if closed else 'open'} domain)")
                m = {f: metrics(store, args.checkout, folder, f, closed) for f in FORMS}
                ours = [
                    (m["short"]["accuracy"], m["long"]["accuracy"]),
                    (m["short"]["refined_accuracy"], m["long"]["refined_accuracy"]),
                    (m["short_balanced"]["accuracy"], m["long_balanced"]["accuracy"]),
                ]
                for row, got, want in zip(ROWS, ours, paper, strict=True):
                    same = all(round(g, 2) == w for g, w in zip(got, want, strict=True))
                    differ += not same
                    print(
                        f"  {row:22} robust {got[0]:.2f} (paper {want[0]:.2f})  non-robust "
                        f"{got[1]:.2f} (paper {want[1]:.2f})  {'agrees' if same else 'DIFFERS'}"
                    )
    print("every figure agrees" if not differ else f"{differ} rows differ from the paper")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
