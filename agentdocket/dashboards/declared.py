"""The scorers the dashboards chart and the verdict details they read, taken from the scorers'
declarations: a name or detail key a scorer does not declare fails here, when the views and
panels are built, not in Grafana."""

from __future__ import annotations

from agentdocket import scorers


def scorer(name: str) -> str:
    """``name`` as an SQL string literal, if a scorer of that name is registered."""
    scorers.get(name)
    return f"'{name}'"


def family(prefix: str) -> str:
    """An SQL LIKE pattern for the scorers named ``prefix.*`` (``review.peer``), if any."""
    if not [n for n in scorers.matching(prefix) if n != prefix]:
        raise KeyError(f"no scorer is named {prefix}.*")
    return f"'{prefix}.%'"


def names(*names: str) -> str:
    """An SQL list of scorer names: ``('a', 'b')``."""
    return "(" + ", ".join(scorer(n) for n in names) + ")"


def detail(owner: str, key: str) -> str:
    """``key`` as an SQL string literal, if ``owner`` (a scorer name, or a family ``prefix.*``)
    declares it: every scorer of the family, in one of its registered versions (the views read
    the verdicts of all of them; a version that declares no details, as a plugin's may not, is
    not held against it)."""
    owners = scorers.matching(owner[:-2]) if owner.endswith(".*") else [owner]
    for name in owners:
        scorers.get(name)
        versions = [s.details for s in scorers.scorers() if s.name == name]
        if not any(key in declared for declared in versions):
            keys = sorted({k for declared in versions for k in declared})
            raise KeyError(
                f"the dashboards read detail {key!r} of scorer {name}, which declares only "
                f"{', '.join(keys) or 'none'}"
            )
    return f"'{key}'"
