"""The grader's shape, read from its source (fast: nothing runs): no import circle between its modules,
no private method of jupyter_client or nbgrader overridden or called, and the sandbox is a kernel
provisioner selected by the grading kernel spec, configured through traits."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"


def modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return found


def imports_of(name: str, tree: ast.Module, known: set[str]) -> set[str]:
    """The autograder modules `name` imports, anywhere in its body (function-level imports count)."""
    package = name if (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists() else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {target for target in targets if target in known and target != name}
    return found


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circle_between_the_graders_modules():
    trees = modules()
    known = set(trees)
    graph = {name: {target for target in imports_of(name, tree, known)
                     if not name.startswith(target + ".")}  # a module imports its own package's __init__
             for name, tree in trees.items()}
    assert cycle(graph) is None, f"import circle: {' -> '.join(cycle(graph))}"


def private_uses(tree: ast.Module) -> list[str]:
    """`x._name` where x is not self or cls, and methods named `_name` in classes that extend an
    imported (jupyter_client, nbgrader, nbclient, nbconvert) class."""
    import importlib

    found = []
    foreign = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
                "jupyter_client", "nbgrader", "nbclient", "nbconvert"):
            module = importlib.import_module(node.module)
            foreign |= {alias.asname or alias.name: getattr(module, alias.name, None) for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.ClassDef) and any(isinstance(base, ast.Name) and base.id in foreign for base in node.bases):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("_") \
                        and not item.name.startswith("__") and any(
                            hasattr(foreign[base.id], item.name) for base in node.bases if isinstance(base, ast.Name)
                            and base.id in foreign):
                    found.append(f"line {item.lineno}: {node.name}.{item.name} overrides a private method")
    return found


def test_the_private_use_finder_sees_both_kinds():
    tree = ast.parse("from jupyter_client import KernelManager\nclass K(KernelManager):\n"
                     "    async def _async_launch_kernel(self): self._reconcile()\nkm._reconcile_connection_info()\n")
    assert sorted(private_uses(tree)) == ["line 3: K._async_launch_kernel overrides a private method",
                                          "line 4: km._reconcile_connection_info"]


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_private_method_of_a_library_is_used(name):
    assert private_uses(modules()[name]) == []


def test_the_sandbox_is_a_provisioner_that_the_grading_kernel_spec_selects():
    from jupyter_client.provisioning import KernelProvisionerFactory
    from jupyter_client.provisioning import LocalProvisioner
    from traitlets.config import Config

    from autograder.execution.provisioner import SandboxProvisioner
    from autograder.execution.sandbox import Limits
    from autograder.nbgrader_setup import kernelspec
    from autograder.nbgrader_setup.config import configure

    entries = KernelProvisionerFactory.instance().get_provisioner_entries()
    assert entries[kernelspec.PROVISIONER] == "autograder.execution.provisioner:SandboxProvisioner"
    spec = kernelspec.spec()
    assert spec["metadata"]["kernel_provisioner"] == {"provisioner_name": kernelspec.PROVISIONER}
    assert spec["interrupt_mode"] == "message"
    assert issubclass(SandboxProvisioner, LocalProvisioner)
    config = configure(Config(), sandbox="none", limits=Limits(disk_bytes=5, tasks=6, cpu_seconds=7))
    assert config.Execute.kernel_name == kernelspec.GRADING_KERNEL
    provisioner = SandboxProvisioner(kernel_id="k", kernel_spec=None, config=config)
    assert (provisioner.mode, provisioner.disk_bytes, provisioner.tasks, provisioner.cpu_seconds) == ("none", 5, 6, 7)
    assert not provisioner.sandboxed
