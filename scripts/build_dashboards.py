"""The Grafana dashboards, as code: ``python scripts/build_dashboards.py`` writes
dashboards/json/*.json and the alert rules in dashboards/provisioning/alerting/.

What they hold is built by agentdocket/dashboards/build.py (grafana-foundation-sdk's typed
builders) from the declarations in agentdocket/dashboards/: the panels' SQL and columns in
agentdocket/dashboards/panels/, the alert rules in agentdocket/dashboards/alerts.py.
``--check`` exits 1 when the committed JSON is not what the code builds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.dashboards import alerts, build

OUT = Path(__file__).resolve().parents[1] / "dashboards" / "json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the JSON is not current")
    defaults = alerts.Thresholds()
    for name in defaults.__dataclass_fields__:
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=type(getattr(defaults, name)),
            default=getattr(defaults, name),
            help=f"alert threshold (default {getattr(defaults, name)})",
        )
    args = parser.parse_args()
    thresholds = alerts.Thresholds(
        **{name: getattr(args, name) for name in defaults.__dataclass_fields__}
    )
    stale = []
    OUT.mkdir(exist_ok=True)
    for relative, text in build.files(thresholds).items():
        path = OUT.parent / relative
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print(
            f"not current (run python scripts/build_dashboards.py): {', '.join(stale)}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
