"""The layout's rules, checked on the source: no import cycle between modules or between
packages, and dependencies pointing one way: event types (standard library only) <- store <-
migrations <- the rest <- commands <- cli. Inside the store: the backends are reached through
their registry, and every abstract recorder or role is small."""

from __future__ import annotations

import ast
import importlib
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentdocket"
# Each package may import from the layers before it (and from itself), never after.
LAYERS = [
    {"events"},
    {"store"},
    {"migrations"},  # run by the store through Alembic, which the store finds by path
    {"ingest", "importers", "scorers", "generators", "costs", "outbound"},
    {"tracer", "examiner", "demo", "dashboards", "experiments", "follow", "people"},
    {"runtime"},
    {"commands"},
    {"cli"},
]
# agentdocket/__init__.py (the version) and agentdocket/errors.py (the root exception, standard
# library only): imported by anyone, importing nothing of agentdocket
TOP = {"__init__", "errors"}


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the agentdocket modules it imports (at any level, TYPE_CHECKING included)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.append(sub if sub in modules else node.module)
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    sys.setrecursionlimit(10_000)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(_imports(_modules())) == []


def test_no_import_cycle_between_packages() -> None:
    packages: dict[str, set[str]] = defaultdict(set)
    for module, targets in _imports(_modules()).items():
        for target in targets:
            if _package(module) != _package(target):
                packages[_package(module)].add(_package(target))
    assert _cycles(packages) == []


def test_the_top_modules_import_nothing_of_agentdocket() -> None:
    graph = _imports(_modules())
    assert graph.get("agentdocket.errors", set()) == set()


def test_every_error_raised_on_purpose_has_the_one_root() -> None:
    """Every exception class agentdocket defines derives from AgentdocketError, so that a
    program catches them all with one clause and the command line maps them in one place."""
    roots = []
    for path in PACKAGE.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {
                b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
            }
            exceptionish = {b for b in bases if b.endswith(("Error", "Exception", "Unavailable"))}
            if exceptionish and node.name != "AgentdocketError":
                roots.append((path.name, node.name, sorted(bases)))
    from agentdocket.errors import AgentdocketError

    classes = {name for _, name, _ in roots}
    for module in _modules():  # every module imported: every error class defined
        if ".migrations." not in module:
            importlib.import_module(module)

    def subclasses(cls: type) -> set[str]:
        return {c.__name__ for c in cls.__subclasses__()} | {
            n for c in cls.__subclasses__() for n in subclasses(c)
        }

    missing = classes - subclasses(AgentdocketError) - {"Rejected"}
    assert missing == set(), sorted(missing)


def test_dependencies_point_one_way() -> None:
    layer = {package: i for i, packages in enumerate(LAYERS) for package in packages}
    modules = _modules()
    assert {_package(m) for m in modules} - TOP <= set(layer), "a package with no layer"
    wrong = [
        f"{module} imports {target}"
        for module, targets in _imports(modules).items()
        for target in targets
        if _package(target) not in TOP
        and _package(module) not in TOP
        and layer[_package(target)] > layer[_package(module)]
    ]
    assert wrong == []


def test_event_types_use_the_standard_library_only() -> None:
    allowed = set(sys.stdlib_module_names) | {"agentdocket"}
    for path in (PACKAGE / "events").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{path.name} imports {roots - allowed}"


def test_no_test_module_imports_another() -> None:
    """Shared test code lives in tests/helpers (or conftest fixtures), never in a test file."""
    tests = PACKAGE.parent / "tests"
    wrong = []
    for path in tests.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                name = node.module.rsplit(".", 1)[-1]
                if name.startswith("test_") or name == "conftest":
                    wrong.append(f"{path.relative_to(tests)} imports {node.module}")
    assert wrong == []


BACKENDS = PACKAGE / "store" / "backends"


def _in_backends(path: Path) -> bool:
    """A module of store/backends/: the registry, or a backend's own module or package."""
    return path.is_relative_to(BACKENDS)


RECORDER_NAMES = {"recorder", "db"}


def _reaches_into_a_recorder(path: Path) -> list[str]:
    """``recorder._x`` / ``db._x`` / ``….recorder._x`` in a module: an underscore member of a
    recorder reached from outside its class."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__"):
            continue
        owner = node.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
        if name in RECORDER_NAMES:
            found.append(f"{path.name}:{node.lineno} .{name}.{node.attr}")
    return found


def test_no_module_reaches_an_underscore_member_of_a_recorder() -> None:
    """The recorder's protocol is public (store/recorder.py); only the backends' own modules
    touch their private parts. Tests neither."""
    tests = PACKAGE.parent / "tests"
    paths = [*PACKAGE.rglob("*.py"), *(p for p in tests.rglob("*.py") if "fixtures" not in p.parts)]
    reaching = [hit for p in paths if not _in_backends(p) for hit in _reaches_into_a_recorder(p)]
    assert reaching == []


DIALECT_NAMES = {"postgresql", "sqlite", "postgres"}
# the tests' own per-database setup: the fixtures that make each kind of database, the raw SQL
# that makes a database refuse records, the docs' blocks run on each
SETUP = {"tests/conftest.py", "tests/helpers/db.py", "tests/e2e/test_docs_blocks.py"}


def _branches_on_a_dialect(path: Path) -> list[str]:
    """A comparison with a database's name (``== "postgresql"``, ``url.startswith("sqlite")``):
    a branch on which backend this is, instead of on what it can do."""
    found = []
    tree = ast.parse(path.read_text(), str(path))
    asserted = {id(n) for a in ast.walk(tree) if isinstance(a, ast.Assert) for n in ast.walk(a)}
    for node in ast.walk(tree):
        if id(node) in asserted:  # a check of data (a span naming its database), no branch
            continue
        names: list[object] = []
        if isinstance(node, ast.Compare):
            names = [c.value for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "startswith":
            names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        if any(isinstance(n, str) and n in DIALECT_NAMES for n in names):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_no_branch_on_a_database_name_outside_the_backends() -> None:
    """What differs by database is a recorder's method or a capability of its record in
    store/backends/ (``backend_of(url).rollups``); nothing else asks which database it is.
    Migrations are the exception: each is written once for both databases. Tests neither,
    but for the few that make a database of each kind for the rest (SETUP)."""
    tests = PACKAGE.parent / "tests"
    paths = [*PACKAGE.rglob("*.py"), *(p for p in tests.rglob("*.py") if "fixtures" not in p.parts)]
    branching = [
        hit
        for p in paths
        if not _in_backends(p)
        and "migrations" not in p.parts
        and str(p.relative_to(PACKAGE.parent)) not in SETUP
        for hit in _branches_on_a_dialect(p)
    ]
    assert branching == []


def test_a_backends_own_modules_are_reached_through_the_registry() -> None:
    """Outside store/backends/ nothing imports a backend's module (``agentdocket.store.
    backends.postgres.locks``): what differs by database is reached through the registry
    (``backend_of(url)``) and the recorder and roles it opens."""
    modules = _modules()
    wrong = [
        f"{module} imports {target}"
        for module, targets in _imports(modules).items()
        if not _in_backends(modules[module])
        for target in targets
        if target.startswith("agentdocket.store.backends.")
    ]
    assert wrong == []


MOST_ABSTRACT = 15


def test_no_abstract_class_of_the_store_asks_for_more_than_fifteen_methods() -> None:
    """A new backend implements a small core recorder and the roles it plays, each small (as
    pyeventsourcing's recorders are), never one class of everything."""
    import inspect
    from abc import ABC

    counted = {}
    for name in _modules():
        if not name.startswith("agentdocket.store"):
            continue
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if inspect.isclass(cls) and issubclass(cls, ABC) and cls.__module__ == name:
                counted[f"{name}.{cls.__name__}"] = len(getattr(cls, "__abstractmethods__", ()))
    assert "agentdocket.store.recorder.Recorder" in counted  # the check sees the core
    assert {k: n for k, n in counted.items() if n > MOST_ABSTRACT} == {}


def test_the_dashboards_machinery_lives_with_the_dashboards() -> None:
    """The store knows no rollup: the upkeep that marks stale hours and refreshes them, and
    the Grafana role, are the dashboards' (reached by the store through an entry point)."""
    store = {_name(p) for p in (PACKAGE / "store").rglob("*.py")}
    graph = _imports(_modules())
    assert not [m for m in store if any(t.startswith("agentdocket.dashboards") for t in graph[m])]
    from importlib.metadata import entry_points

    [upkeep] = [ep for ep in entry_points(group="agentdocket.upkeep") if ep.name == "rollups"]
    assert upkeep.value.startswith("agentdocket.dashboards.")


def _calls_of(paths: list[Path], name: str) -> list[str]:
    """Where ``name(...)`` is called (a bare name or an attribute), as path:line."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if called == name:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_serving_opens_its_database_in_one_place() -> None:
    """``serve`` builds one store opener per process and hands each service the stores it
    needs: no service of runtime/ or ingest/ opens the database from a URL of its own."""
    paths = [p for room in ("runtime", "ingest") for p in (PACKAGE / room).rglob("*.py")]
    assert _calls_of(paths, "open_store") == []
    openers = sorted(o.split(":")[0] for o in _calls_of(paths, "Opener"))
    assert openers == [
        "agentdocket/ingest/sink.py",  # a sink made alone (the tracer's) has its own
        "agentdocket/runtime/receiver.py",  # serve: one per process
    ]
