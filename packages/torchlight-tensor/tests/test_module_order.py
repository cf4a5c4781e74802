"""The tensor core imports bottom-up: no cycle among its modules, no import hidden in a function.

A module may use only modules below it, so a reader can read ``torchlight/tensor`` in order (the
order this test prints on failure). Function-level imports are how cycles hide, so none is
allowed except of an optional heavy dependency, loaded on first use (listed in ``LAZY``).
"""

import ast
from pathlib import Path

from torchlight.tensor import dispatch

CORE = Path(dispatch.__file__).parent
PACKAGE = "torchlight.tensor"

# (module, imported name) -> why it is imported inside a function
LAZY = {
    ("backend.numpy_ops", "scipy.special"): "importing scipy costs most of a second; erf only",
    ("backend.numpy", "threadpoolctl"): "optional; set_num_threads only",
}


def _module_name(path):
    rel = path.relative_to(CORE).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _resolve(module, node):
    """The core module an ``import``/``from`` node names (``None`` for anything outside)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.level == 0:
        names = [node.module or ""]
        names += [f"{node.module}.{a.name}" for a in node.names]
    else:
        package = module.split(".") if module else []
        is_package = (CORE / Path(*package) / "__init__.py").exists() if package else True
        base = package if is_package else package[:-1]
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        prefix = ".".join(base + ([node.module] if node.module else []))
        # ``from . import x`` names submodule x, not the package being initialised around it
        names = [prefix] if node.module else []
        names += [f"{prefix}.{a.name}".strip(".") for a in node.names]
        names = [f"{PACKAGE}.{n}".rstrip(".") for n in names]
    found = []
    for n in names:
        if n.startswith(PACKAGE + "."):
            rel = n[len(PACKAGE) + 1 :]
            if (CORE / Path(*rel.split("."))).with_suffix(".py").exists() or (
                CORE / Path(*rel.split(".")) / "__init__.py"
            ).exists():
                found.append(rel)
    return found, names


def _imports():
    """module -> (core modules it imports at module level, function-level imports)."""
    graph, hidden = {}, []
    for path in sorted(CORE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        deps = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            found, names = _resolve(module, node)
            names = names or [ast.unparse(node)]
            top = node in tree.body or any(
                node in stmt.body
                for stmt in tree.body
                if isinstance(stmt, (ast.If, ast.Try)) and not _type_checking(stmt)
            )
            if top:
                deps.update(found)
            elif not _under_type_checking(tree, node):
                hidden.append((module, names[0], node.lineno))
        deps.discard(module)
        graph[module] = deps
    return graph, hidden


def _type_checking(stmt):
    return isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)


def _under_type_checking(tree, node):
    return any(_type_checking(s) and node in list(ast.walk(s)) for s in tree.body)


def _order(graph):
    """A bottom-up order of the modules, or the modules left in a cycle."""
    done, order = set(), []
    remaining = dict(graph)
    while remaining:
        ready = sorted(m for m, deps in remaining.items() if deps - {""} <= done)
        if not ready:
            return None, sorted(remaining)
        for m in ready:
            done.add(m)
            order.append(m)
            del remaining[m]
    return order, []


def test_no_function_level_imports_in_the_tensor_core():
    _, hidden = _imports()
    unexplained = [
        f"{m}.py:{line} imports {name}" for m, name, line in hidden if (m, name) not in LAZY
    ]
    assert not unexplained, (
        "imports inside functions (a hidden cycle, or a lazy import without a reason in LAZY): "
        + "; ".join(unexplained)
    )


def test_the_tensor_core_has_no_import_cycle():
    graph, _ = _imports()
    for deps in graph.values():
        deps.discard("")  # the package itself (``from . import dtypes`` names its module too)
    order, cyclic = _order({m: {d for d in deps if d in graph} for m, deps in graph.items()})
    assert order is not None, f"modules in an import cycle: {cyclic}"


def test_the_checker_sees_a_cycle_and_a_hidden_import():
    assert _order({"a": {"b"}, "b": {"a"}, "c": set()}) == (None, ["a", "b"])
    assert _order({"a": {"b"}, "b": set()}) == (["b", "a"], [])
    graph, _ = _imports()
    # known edges, both directions of the layering
    assert "dispatch" in graph["creation"] and "base" in graph["creation"]
    assert "tensor" in graph["factories"] and "factories" not in graph["tensor"]


def test_no_module_rebinds_a_name_in_another():
    """``dispatch.Tensor = Tensor`` at the end of a higher module is a cycle in disguise."""
    rebound = []
    for path in sorted(CORE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        modules = {
            (a.asname or a.name)
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for a in node.names
        }
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    if t.value.id in modules:
                        rebound.append(f"{_module_name(path)}: {ast.unparse(t)}")
    assert not rebound, f"module-level assignments into other modules: {rebound}"
