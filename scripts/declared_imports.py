"""Dependencies declared where they are imported, checked on agentdocket's source.

Every third-party module that agentdocket imports, at module level or inside a function
(``if TYPE_CHECKING:`` blocks aside: they never run), must come from a distribution that
pyproject.toml declares by name: in the base dependencies, or in the user extra whose feature
imports it (:data:`FEATURES`). A distribution that only comes along with another one does not
count: its version is then another package's choice. And the modules that ``agentdocket``
loads at start-up (``agentdocket.cli`` and what it imports at module level) import base
dependencies only, or ``agentdocket --help`` fails without an extra.

Which distribution a module comes from is read from the installed distributions' file lists
(importlib.metadata), so run it with the development environment's Python, where every extra
is installed::

    .venv/bin/python scripts/declared_imports.py [ROOT]

ROOT is the source tree to check (default: this clone). Exit status 1 with a line for each
problem, 0 with a summary of the third-party imports by where they are declared.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# The extras a user installs for a feature, and the code of that feature: a module, or a
# function (module.function), listed here may import what its extra declares.
FEATURES: dict[str, tuple[str, ...]] = {
    "serve": (
        "agentdocket.runtime.otlp_http",  # OTLP/HTTP (starlette, opentelemetry-proto)
        "agentdocket.runtime.otlp_grpc",  # OTLP/gRPC
        "agentdocket.runtime.metrics",  # /metrics
        "agentdocket.runtime.siblings",  # /metrics of several receiver processes
        "agentdocket.ingest.otlp._parse_protobuf",  # the receivers' protobuf bodies
        "agentdocket.ingest.otlp_logs.decode_logs_protobuf",
        "agentdocket.people.annotate",  # the annotators' page, on serve's HTTP port
        "agentdocket.follow.metrics",  # score --follow --metrics-port
        "agentdocket.runtime",  # serve's processes, uvicorn
    ),
    "embeddings": ("agentdocket.scorers.embeddings",),
    "local": ("agentdocket.scorers.judges.local",),  # local:smollm2, the judge run here
    "otlp": ("agentdocket.outbound.otlp",),  # export verdicts --otlp
}
# The developers' extras (the test suite, the checks, the docs): the package imports none of
# them, but for modules only the developers' tools use, which no other module imports.
DEVELOPMENT_EXTRAS = {"test", "frameworks", "lint", "docs", "dashboards", "dev"}
TOOLS: dict[str, tuple[str, ...]] = {
    # scripts/build_dashboards.py writes the committed dashboards' JSON with it
    "dashboards": ("agentdocket.dashboards.build",),
}
# Imported inside ``try: ... except ImportError`` with a message saying what to install, and
# declared nowhere on purpose: the user chooses it along with packages of their own.
UNDECLARED = {
    # a judge model named by a string ("openai:gpt-4o-mini") needs langchain and the
    # provider's package (langchain-openai, ...), whichever provider the user has
    "langchain": "agentdocket.scorers.judges.client",
}
START = "agentdocket.cli"


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return normalized(match.group(1))


def declared(pyproject: Path) -> tuple[set[str], dict[str, set[str]]]:
    """The base dependencies' names, and each extra's (an extra naming agentdocket's own
    extras, as ``dev`` does, takes theirs)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    base = {_requirement_name(r) for r in project.get("dependencies", [])}
    raw: dict[str, list[str]] = project.get("optional-dependencies", {})
    extras: dict[str, set[str]] = {}

    def names(extra: str) -> set[str]:
        if extra not in extras:
            extras[extra] = set()
            for requirement in raw[extra]:
                own = re.match(r"\s*agentdocket\[([^\]]*)\]", requirement)
                if own:
                    for other in own.group(1).split(","):
                        extras[extra] |= names(other.strip())
                else:
                    extras[extra].add(_requirement_name(requirement))
        return extras[extra]

    for extra in raw:
        names(extra)
    return base, extras


@functools.cache
def _module_index() -> dict[str, set[str]]:
    """Dotted module name (and each package above it) -> the installed distributions that
    hold it, from their RECORD files; the top-level names of distributions without one."""
    index: dict[str, set[str]] = defaultdict(set)
    for dist in importlib.metadata.distributions():
        name = normalized(dist.metadata["Name"])
        for file in dist.files or ():
            parts = file.parts
            if not parts or ".." in parts or parts[0].endswith((".dist-info", ".egg-info")):
                continue
            if "__pycache__" in parts or not file.name.endswith((".py", ".so", ".pyd")):
                continue
            stem = file.name.split(".", 1)[0]
            dotted = [*parts[:-1]] if stem == "__init__" else [*parts[:-1], stem]
            for i in range(1, len(dotted) + 1):
                index[".".join(dotted[:i])].add(name)
    for top, dists in importlib.metadata.packages_distributions().items():
        if top not in index:
            index[top] = {normalized(d) for d in dists}
    return index


@dataclass(frozen=True)
class Import:
    module: str  # the agentdocket module importing
    scope: str  # where in it: the module, or module.function (module.Class.method)
    line: int
    names: tuple[str, ...]  # what it may name, most precise first: a.b.c, a.b, a
    top_level: bool  # run when the module is loaded (not inside a function)
    optional: bool  # inside ``try: ... except ImportError``


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _catches_import_error(node: ast.Try | ast.TryStar) -> bool:
    for handler in node.handlers:
        kinds = handler.type
        named = [kinds] if not isinstance(kinds, ast.Tuple) else list(kinds.elts)
        for kind in named:
            if kind is None or getattr(kind, "id", None) in {"ImportError", "ModuleNotFoundError"}:
                return True
    return False


def imports_of(module: str, path: Path) -> Iterator[Import]:
    """The absolute imports of one source file, TYPE_CHECKING blocks left out."""

    def visit(
        nodes: Sequence[ast.AST], scope: str, top_level: bool, optional: bool
    ) -> Iterator[Import]:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                yield from visit(node.orelse, scope, top_level, optional)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    names = tuple(".".join(parts[:i]) for i in range(len(parts), 0, -1))
                    yield Import(module, scope, node.lineno, names, top_level, optional)
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0 and node.module:
                    parts = node.module.split(".")
                    above = tuple(".".join(parts[:i]) for i in range(len(parts), 0, -1))
                    for alias in node.names:
                        names = (f"{node.module}.{alias.name}", *above)
                        yield Import(module, scope, node.lineno, names, top_level, optional)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inside = f"{scope}.{node.name}"
                is_class = isinstance(node, ast.ClassDef)
                yield from visit(node.body, inside, top_level and is_class, optional)
                yield from visit(node.decorator_list, scope, top_level, optional)
            elif isinstance(node, ast.Try | ast.TryStar):
                # the body alone is guarded; the handlers, else and finally are not
                guarded = optional or _catches_import_error(node)
                yield from visit(node.body, scope, top_level, guarded)
                for part in (node.handlers, node.orelse, node.finalbody):
                    yield from visit(part, scope, top_level, optional)
            else:
                inner = not isinstance(node, ast.Lambda)
                yield from visit(
                    list(ast.iter_child_nodes(node)), scope, top_level and inner, optional
                )

    tree = ast.parse(path.read_text(), str(path))
    yield from visit(tree.body, module, True, False)


def _modules(package: Path) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _within(scope: str, prefixes: tuple[str, ...]) -> bool:
    return any(scope == p or scope.startswith(p + ".") for p in prefixes)


def _extra_of(scope: str) -> str | None:
    """The extra (a user feature's or a development tool's) whose code ``scope`` is."""
    for extra, prefixes in (*FEATURES.items(), *TOOLS.items()):
        if _within(scope, prefixes):
            return extra
    return None


def _target(imp: Import, modules: dict[str, Path]) -> str | None:
    """The agentdocket module an import loads, if it names one."""
    return next((n for n in imp.names if n in modules), None)


def _loaded_at_start(imports: list[Import], modules: dict[str, Path]) -> set[str]:
    """The agentdocket modules that importing :data:`START` loads: module-level imports,
    followed, with the packages above each module."""
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in imports:
        target = _target(imp, modules)
        if imp.top_level and not imp.optional and target is not None:
            graph[imp.module].add(target)
    seen: set[str] = set()
    todo = [START]
    while todo:
        parts = todo.pop().split(".")
        for name in [".".join(parts[:i]) for i in range(1, len(parts) + 1)]:
            if name in modules and name not in seen:
                seen.add(name)
                todo.extend(graph[name])
    return seen


def check(root: Path) -> tuple[list[str], dict[str, set[str]]]:
    """The problems found in ``root``'s source, and the distributions imported, by where they
    are declared (``base`` or an extra's name)."""
    base, extras = declared(root / "pyproject.toml")
    problems = [
        f"pyproject.toml: extra {extra!r} is neither a user feature's (FEATURES) nor a "
        "development extra (DEVELOPMENT_EXTRAS) in scripts/declared_imports.py: say which"
        for extra in extras
        if extra not in FEATURES and extra not in DEVELOPMENT_EXTRAS
    ]
    modules = _modules(root / "agentdocket")
    imports = [imp for name, path in sorted(modules.items()) for imp in imports_of(name, path)]
    at_start = _loaded_at_start(imports, modules)
    index = _module_index()
    stdlib = set(sys.stdlib_module_names)
    tools = {m for prefixes in TOOLS.values() for m in prefixes}
    used: dict[str, set[str]] = defaultdict(set)
    said: set[tuple[str, str]] = set()
    for imp in imports:
        where = f"{modules[imp.module].relative_to(root)}:{imp.line}"
        target = _target(imp, modules)
        if target in tools and not _within(imp.module, (target,)):
            problems.append(
                f"{where}: imports {target}, a development tool's module (TOOLS): a user's "
                "install lacks what it imports"
            )
        top = imp.names[-1]
        if top in stdlib or top == "agentdocket":
            continue
        if top in UNDECLARED and imp.optional and _within(imp.module, (UNDECLARED[top],)):
            used[f"undeclared, guarded ({top})"].add(top)
            continue
        found = next((index[n] for n in imp.names if n in index), None)
        if found is None:
            problems.append(
                f"{where}: {imp.names[0]} is not installed here, so its distribution is "
                "unknown (run this with .venv/bin/python, every extra installed)"
            )
            continue
        extra = _extra_of(imp.scope)
        allowed = base | (extras.get(extra, set()) if extra else set())
        dists = ", ".join(sorted(found))
        if (where, dists) in said:
            continue
        said.add((where, dists))
        if not found & allowed:
            in_extras = sorted(e for e, names in extras.items() if found & names)
            if extra:
                fix = f"declare it in the base dependencies or in [{extra}]"
            else:
                fix = (
                    f"declare it in the base dependencies, or list {imp.scope} (or its "
                    "module) in FEATURES under the user extra that declares it"
                )
            problems.append(
                f"{where}: {imp.names[0]} comes from {dists}, declared "
                f"{'in [' + '], ['.join(in_extras) + ']' if in_extras else 'nowhere'}: {fix}"
            )
            continue
        if imp.module in at_start and imp.top_level and not imp.optional and not found & base:
            problems.append(
                f"{where}: {imp.names[0]} ({dists}) is imported when agentdocket starts "
                f"({imp.module} is loaded by {START}) but is no base dependency: import it "
                "where its feature runs"
            )
            continue
        for dist in found & allowed:
            used["base" if dist in base else f"[{extra}]"].add(dist)
    return problems, used


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    problems, used = check(root.resolve())
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"declared_imports: {len(problems)} problems in {root}", file=sys.stderr)
        return 1
    for where, dists in sorted(used.items()):
        print(f"imported, {where}: {', '.join(sorted(dists))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
