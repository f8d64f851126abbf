"""Whether a query joins tables distributed by ``trace_id`` only on ``trace_id`` (what Citus
needs to run a join on the workers): parsed with sqlglot, scope by scope."""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from agentdocket.store.backends.citus.distribution import CO_LOCATED

KEY = "trace_id"


def _tables(node: exp.Expression) -> set[str]:
    return {t.name for t in node.find_all(exp.Table)}


def trace_views(definitions: dict[str, str]) -> set[str]:
    """The views that read trace-keyed data and give its ``trace_id``: they join like the
    tables under them (others, aggregates, are joined like anything else)."""
    keyed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, sql in definitions.items():
            if name in keyed:
                continue
            ast = sqlglot.parse_one(sql, read="postgres")
            reads = _tables(ast) & (CO_LOCATED | keyed)
            outputs = {s.lower() for s in getattr(ast, "named_selects", [])}
            if reads and KEY in outputs:
                keyed.add(name)
                changed = True
    return keyed


class _Components:
    def __init__(self, names: Iterable[str]) -> None:
        self.parent = {n: n for n in names}

    def find(self, n: str) -> str:
        while self.parent[n] != n:
            n = self.parent[n]
        return n

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)

    def groups(self) -> set[str]:
        return {self.find(n) for n in self.parent}


def _is_trace(source: object, keyed: set[str]) -> bool:
    if isinstance(source, exp.Table):
        return source.name in CO_LOCATED or source.name in keyed
    if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
        # a subquery that gives trace_id row by row (not an aggregate of many runs, which
        # Citus plans on its own and joins as an intermediate result)
        expression = source.expression
        keys = [e for e in expression.expressions if e.alias_or_name.lower() == KEY]
        per_run = bool(keys) and not any(k.find(exp.AggFunc) for k in keys)
        return per_run and bool(_tables(expression) & (CO_LOCATED | keyed))
    return False


def _outer_is_trace(scope: Scope, alias: str, keyed: set[str]) -> bool:
    """Whether ``alias``, a source of a query around ``scope``, is trace-keyed."""
    outer = scope.parent
    while outer is not None:
        if alias in outer.sources:
            return _is_trace(outer.sources[alias], keyed)
        outer = outer.parent
    return False


def _own(scope: Scope) -> set[str]:
    """The sources in the scope's own FROM and JOINs (a lateral subquery also sees those of
    the query around it)."""
    select = scope.expression
    names = set()
    if (from_ := select.args.get("from_") or select.args.get("from")) is not None:
        names.add(from_.this.alias_or_name)
    names.update(j.this.alias_or_name for j in select.args.get("joins") or [])
    return names & set(scope.sources)


def _key_column(node: exp.Expression) -> exp.Column | None:
    return node if isinstance(node, exp.Column) and node.name.lower() == KEY else None


def problems(sql: str, keyed: set[str]) -> list[str]:
    """Each place where two trace-keyed sources meet without equal ``trace_id``."""
    found: list[str] = []
    ast = sqlglot.parse_one(sql, read="postgres")
    scopes = [s for s in traverse_scope(ast) if isinstance(s.expression, exp.Select)]
    tied_out: dict[int, set[str]] = {}  # scope -> its trace sources equated to an outer one
    for scope in scopes:
        own = _own(scope)
        trace = {a for a in own if _is_trace(scope.sources[a], keyed)}
        parts = _Components([*trace, "^outer"])
        only = next(iter(trace)) if len(trace) == 1 else None
        for eq in scope.find_all(exp.EQ):
            left, right = _key_column(eq.left), _key_column(eq.right)
            if left is None or right is None:
                continue
            a, b = left.table or only, right.table or only
            inside = [x for x in (a, b) if x in trace]
            outside = [x for x in (a, b) if x and x not in own]
            if len(inside) == 2:
                parts.union(inside[0], inside[1])
            elif len(inside) == 1 and outside:
                parts.union(inside[0], "^outer")
        for join in scope.expression.args.get("joins") or []:
            using = [c.name.lower() for c in join.args.get("using") or []]
            if KEY in using and trace:
                alias = join.alias_or_name
                for other in trace - {alias}:
                    if alias in trace:
                        parts.union(alias, other)
        # a lateral or derived source equated to one of ours inside it
        for alias, source in scope.sources.items():
            if isinstance(source, Scope) and alias in trace and id(source) in tied_out:
                for other in trace - {alias}:
                    parts.union(alias, other)
                    break
        # `x.trace_id IN (SELECT trace_id FROM ...)`: a semi-join on the key
        for node in scope.find_all(exp.In):
            column = _key_column(node.this)
            query = node.args.get("query")
            if column is not None and query is not None:
                target = column.table or only
                if target in trace:
                    for sub in scopes:
                        if sub.expression is query.this or sub.expression is query:
                            tied_out.setdefault(id(sub), set()).add("in")
        inner_trace_groups = {parts.find(a) for a in trace}
        outer = parts.find("^outer")
        if scope.parent is not None and trace and outer in inner_trace_groups:
            tied_out.setdefault(id(scope), set()).update(trace)
        # correlated on rows of trace-keyed data: on rows of anything else (the coordinator's
        # stale hours, an aggregate), Citus sends those rows to every shard instead
        correlated = scope.parent is not None and any(
            c.table and c.table not in own and _outer_is_trace(scope, c.table, keyed)
            for c in scope.find_all(exp.Column)
        )
        if correlated and trace and "in" not in tied_out.get(id(scope), set()):
            loose = [a for a in trace if parts.find(a) != outer]
            if loose:
                found.append(
                    f"{', '.join(sorted(loose))} read in a correlated subquery without "
                    f"{KEY} equal to the outer query's: {scope.expression.sql()[:160]}"
                )
        elif len(inner_trace_groups) > 1:
            found.append(
                f"{', '.join(sorted(trace))} joined without equal {KEY}: "
                f"{scope.expression.sql()[:160]}"
            )
    return found
