"""`agentdocket followers`: how far each follower of live traffic has scored."""

from __future__ import annotations

import click

from agentdocket.commands.common import FORMAT, console, echo_json, new_table, open_from
from agentdocket.events import JUDGEMENT_KINDS, format_ts

EXPORT_PREFIX = "export:"  # agentdocket.outbound.forward.cursor_name's


@click.command()
@FORMAT
@click.pass_context
def followers(ctx: click.Context, fmt: str) -> None:
    """List the followers' cursors (`score --follow`, `serve --score`): where each resumes,
    when it last moved, and the events and finished runs stored after it. A cursor named
    export:NAME:ENDPOINT is a follower's [export]: its events behind are the verdicts not sent
    yet.

    \b
    Examples:
      agentdocket followers
      agentdocket followers --format json
    """
    rows = []
    with open_from(ctx) as store:
        following = store.arrivals
        for name, position, moved in following.cursors():
            sending = name.startswith(EXPORT_PREFIX)  # a forwarder's: it reads verdicts
            rows.append(
                {
                    "follower": name,
                    "position": str(position),
                    "moved_at": None if moved is None else format_ts(moved),
                    "events_behind": following.count_after(
                        position,
                        **(
                            {"only_kinds": ("verdict",)}
                            if sending
                            else {"skip_kinds": JUDGEMENT_KINDS}
                        ),
                    ),
                    "finished_runs_behind": None
                    if sending
                    else following.count_after(position, only_kinds=("run.finished",)),
                }
            )
    if fmt == "json":
        echo_json(rows)
        return
    if not rows:
        console.print("no follower has saved a cursor yet (agentdocket score --follow)")
        return
    table = new_table(title="followers", title_justify="left")
    for col in ("follower", "position", "moved at", "events behind", "finished runs behind"):
        table.add_column(col, justify="right" if "behind" in col else "left")
    for r in rows:
        table.add_row(
            str(r["follower"]),
            str(r["position"]),
            str(r["moved_at"] or "-"),
            str(r["events_behind"]),
            str("-" if r["finished_runs_behind"] is None else r["finished_runs_behind"]),
        )
    console.print(table)
