"""The rooms keep their walls: the core names no registered thing (the plugins declare what it
needs), the measuring instrument imports only the contract, and no module of the core imports
another that imports it back, at run time (``if TYPE_CHECKING:`` imports aside)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arena_core import BUILTIN_PLUGINS

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "arena_core"
#: What the measuring instrument (``loadgen/``) may import outside itself: the contract and the
#: policy on outside data (types, errors, bounds, the one converter, files, redaction).
CONTRACT = {"arena_core.types", "arena_core.errors", "arena_core.bounds", "arena_core.converter", "arena_core.files", "arena_core.redaction"}
#: Strings of the core that equal a registered name and mean something else, with what they mean.
NOT_NAMES = {
    "reasoning": "the field of a thinking model's text in an OpenAI-compatible stream",
    "sharegpt": "the dataset kind of an open-loop shape (vLLM's --dataset-name sharegpt)",
    "agents": "a capacity search's load (concurrent agents, beside users and rate)",
}


def core_files(*, test_kit: bool = False) -> list[Path]:
    """The core's modules; the test kit (``arena_core.testing``, whose rig speaks engines'
    dialects on purpose) only where ``test_kit``."""
    return sorted(p for p in CORE.rglob("*.py") if test_kit or "testing" not in p.relative_to(CORE).parts)


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def run_time_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import that runs: at the top, in functions, not under TYPE_CHECKING."""
    found, skipped = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skipped |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def core_modules() -> dict[str, Path]:
    return {module_name(path): path for path in core_files()}


def imported_modules(path: Path, known: dict[str, Path]) -> set[str]:
    """The core modules ``path`` imports at run time (``from a.b import c`` is ``a.b.c`` where that
    is a module, else ``a.b``); the package itself is left out (every module is under it)."""
    found = set()
    for _, name in run_time_imports(ast.parse(path.read_text(encoding="utf-8"))):
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != "arena_core":
            found.add(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_core_module_imports_one_that_imports_it_back():
    known = core_modules()
    graph = {name: imported_modules(path, known) - {name} for name, path in known.items()}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_instrument_imports_only_the_contract():
    known = core_modules()
    outside = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((CORE / "loadgen").rglob("*.py"))
        for name in imported_modules(path, known)
        if not name.startswith("arena_core.loadgen") and not any(name == allowed or name.startswith(allowed + ".") for allowed in CONTRACT)
    }
    assert outside == set()


def plugin_imports(source: str, plugins: set[str]) -> list[str]:
    """Each run-time import in ``source`` of a top-level package in ``plugins``."""
    return [f"line {line}: {name}" for line, name in run_time_imports(ast.parse(source)) if name.split(".")[0] in plugins]


@pytest.mark.parametrize("path", core_files(test_kit=True), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_core_module_imports_a_plugin(path):
    """The core (its test kit included) reaches plugins through the hooks alone: a plugin can be
    disabled, replaced or missing, and the core still imports."""
    plugins = {name.split(".")[0] for name in BUILTIN_PLUGINS if not name.startswith("arena_core")}
    assert plugin_imports(path.read_text(encoding="utf-8"), plugins) == []


def test_the_import_check_catches_a_plugin_imported_in_a_function():
    source = "import arena_site\ndef f():\n    from arena_quality.humaneval import problems\nif TYPE_CHECKING:\n    import arena_fleet\n"
    assert plugin_imports(source, {"arena_site", "arena_quality", "arena_fleet"}) == ["line 1: arena_site", "line 3: arena_quality.humaneval.problems"]


def registered_names(registry) -> dict[str, str]:
    return {name: kind for kind in ("backends", "workloads", "runners", "hardware") for name in registry.names(kind)}


def names_in(source: str, names: dict[str, str]) -> list[str]:
    return [
        f"line {node.lineno}: {node.value!r} ({names[node.value]})"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names and node.value not in NOT_NAMES
    ]


@pytest.mark.parametrize("path", core_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_core_names_no_registered_backend_workload_runner_or_hardware(path, registry):
    assert names_in(path.read_text(encoding="utf-8"), registered_names(registry)) == []


def prefixed_by_a_backend(source: str, backends: list[str]) -> list[str]:
    """Each string of ``source`` that starts with a backend's name and a separator (``vllm:``,
    ``llama-cpp/``): an engine's own vocabulary, which its backend declares (its dialect)."""
    separators = (":", "/", ".", "_")
    return [
        f"line {node.lineno}: {node.value[:40]!r}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(node.value.startswith(name + sep) for name in backends for sep in separators)
    ]


@pytest.mark.parametrize("path", core_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_core_speaks_no_engines_dialect(path, registry):
    assert prefixed_by_a_backend(path.read_text(encoding="utf-8"), registry.names("backends")) == []


def test_the_dialect_check_catches_an_engines_metric_name():
    source = 'GAUGE = "vllm:num_requests_running"\nx = f"llama-cpp/{build}"\nok = "vllm serves it"\n'
    assert prefixed_by_a_backend(source, ["vllm", "llama-cpp"]) == ["line 1: 'vllm:num_requests_running'", "line 2: 'llama-cpp/'"]


def test_the_name_check_catches_a_workload_named_in_the_core(registry):
    assert names_in('HEADLINE = "chat"\nx = card.workload("chat")\n', registered_names(registry)) == [
        "line 1: 'chat' (workloads)",
        "line 2: 'chat' (workloads)",
    ]
    assert names_in('delta.get("reasoning")', registered_names(registry)) == []


#: The longest function the house keeps (lines from its ``def`` to its last, docstring included).
LONGEST_FUNCTION = 60


def long_functions(source: str) -> list[str]:
    return [
        f"line {node.lineno}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > LONGEST_FUNCTION
    ]


@pytest.mark.parametrize("path", [*core_files(test_kit=True), *sorted((ROOT / "plugins").rglob("*.py"))], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_function_is_longer_than_a_screen(path):
    assert long_functions(path.read_text(encoding="utf-8")) == []


def test_the_length_check_counts_a_long_function():
    assert long_functions("def f():\n" + "    x = 1\n" * 60) == ["line 1: f (61 lines)"]
    assert long_functions("def f():\n" + "    x = 1\n" * 59) == []
