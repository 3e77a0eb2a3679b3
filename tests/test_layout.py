"""The package's layout: the import graph of riccati_tf (every import statement, the lazy ones
inside functions included) has no cycle, and each subpackage imports only from the layers below
it — the foundations (errors, display, io), then the mathematics from the state and its law up
to reachability, then the sweeps and the application on top."""

import ast
from pathlib import Path

import pytest

import riccati_tf

PACKAGE = Path(__file__).resolve().parents[1] / "riccati_tf"
#: the layers, lowest first: a module may import from its own layer and the ones before it
LAYERS = (
    {"errors", "display", "lazy"},
    {"state"},
    {"io"},
    {"flows"},
    {"stability"},
    {"symbolic"},
    {"empirical"},
    {"reachability"},
    {"design"},
    {"sweep"},
    {"app", ""},  # "": riccati_tf/__init__.py, the public front door
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    """{module: the riccati_tf modules it imports}, relative and lazy imports resolved; `from
    package import name` counts as importing package.name when that is a module. Imports under
    `if TYPE_CHECKING:` (annotations only, never executed) are left out."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith("riccati_tf")}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if not source.startswith("riccati_tf"):
                    continue
                subs = {f"{source}.{a.name}" for a in node.names} & set(modules)
                targets |= subs or {source}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _runtime_nodes(tree: ast.AST):
    """Every node of tree except the bodies of `if TYPE_CHECKING:` blocks."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            test = child.test if isinstance(child, ast.If) else None
            if test is not None and "TYPE_CHECKING" in ast.unparse(test):
                todo.extend(child.orelse)
            else:
                todo.append(child)


def _layer(module: str) -> int:
    parts = module.split(".")
    group = parts[1] if len(parts) > 1 else ""
    return next(i for i, layer in enumerate(LAYERS) if group in layer)


def test_every_subpackage_has_a_layer():
    for module in _modules():
        _layer(module)  # StopIteration if a new subpackage was not placed


def test_no_import_cycles():
    graph = import_graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_imports_go_down_the_layers():
    graph = import_graph()
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                    if _layer(b) > _layer(a) and not _is_package_init_reexport(a, b))
    assert upward == []


def _is_package_init_reexport(importer: str, imported: str) -> bool:
    """A package's __init__ re-exports its own modules (riccati_tf.sweep → riccati_tf.sweep.x)."""
    return imported.startswith(importer + ".")


@pytest.mark.parametrize("fake, cyclic", [({"a": {"b"}, "b": {"a"}}, True),
                                           ({"a": {"b"}, "b": set()}, False)])
def test_the_cycle_search_finds_a_cycle(fake, cyclic, monkeypatch):
    import tests.test_layout as me

    monkeypatch.setattr(me, "import_graph", lambda: fake)
    if cyclic:
        with pytest.raises(AssertionError):
            me.test_no_import_cycles()
    else:
        me.test_no_import_cycles()


def test_no_module_is_longer_than_900_lines():
    """Modules stay small, one job each: a module past 900 lines is split into a package along
    its method (as flows.exact, stability.equilibria and certificates are)."""
    root = Path(riccati_tf.__file__).parent
    long = {str(p.relative_to(root)): n for p in root.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 900}
    assert long == {}
