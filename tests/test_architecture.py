"""The grader's shape, read from its source (fast: nothing runs): its layers (no package imports a
package above it, no import circle), one meaning per word, one error base class, grade_class as named
steps, no private method of jupyter_client or nbgrader overridden or called, and the sandbox a kernel
provisioner selected by the grading kernel spec, configured through the grading settings."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"


@functools.lru_cache(maxsize=1)
def modules() -> dict[str, ast.Module]:
    """Every module of the package by name, parsed once (the tests only read the trees)."""
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
    from autograder.nbgrader_setup import kernelspec
    from autograder.nbgrader_setup.config import configure
    from autograder.settings import GradingSettings, Limits

    entries = KernelProvisionerFactory.instance().get_provisioner_entries()
    assert entries[kernelspec.PROVISIONER] == "autograder.execution.provisioner:SandboxProvisioner"
    spec = kernelspec.spec()
    assert spec["metadata"]["kernel_provisioner"] == {"provisioner_name": kernelspec.PROVISIONER}
    assert spec["interrupt_mode"] == "message"
    assert issubclass(SandboxProvisioner, LocalProvisioner)
    config = configure(Config())
    config.merge(GradingSettings(sandbox="none", disk_limit=5 / 2**30, task_limit=6, cpu_limit=7).as_config())
    assert config.Execute.kernel_name == kernelspec.GRADING_KERNEL
    provisioner = SandboxProvisioner(kernel_id="k", kernel_spec=None, config=config)
    assert provisioner.limits == Limits(disk_bytes=5, tasks=6, cpu_seconds=7), "one record, read where it is used"
    assert not provisioner.sandboxed


# bottom first: a module may import its own layer and the layers below it, never one above
LAYERS = [
    ("foundation", ("autograder", "autograder.errors", "autograder.settings", "autograder.csvfile",
                    "autograder.runfolder", "autograder.pages")),
    ("nbgrader_setup", ("autograder.nbgrader_setup",)),
    ("execution", ("autograder.execution",)),
    ("lms", ("autograder.lms",)),
    ("grading", ("autograder.grading",)),
    ("authoring", ("autograder.authoring",)),
    ("cli", ("autograder.cli",)),
]


def layer_of(module: str) -> int:
    for number, (_, members) in enumerate(LAYERS):
        if module in members or any(module.startswith(member + ".") for member in members if member != "autograder"):
            return number
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def test_no_package_imports_a_package_above_it():
    trees = modules()
    known = set(trees)
    upward = [f"{name} ({LAYERS[layer_of(name)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
              for name, tree in trees.items() for target in sorted(imports_of(name, tree, known))
              if layer_of(target) > layer_of(name)]
    assert upward == []


def test_grading_and_lms_do_not_import_each_other_in_either_direction():
    trees = modules()
    known = set(trees)
    lms_to_grading = [(name, target) for name, tree in trees.items() if name.startswith("autograder.lms")
                      for target in imports_of(name, tree, known) if target.startswith("autograder.grading")]
    assert lms_to_grading == [], "lms is given plain data (grades.csv's typed rows, due dates)"


def identifiers(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
    return found


def test_one_meaning_per_word():
    trees = modules()
    assert not [name for name, tree in trees.items() if "pending" in identifiers(tree)], \
        "jobs in flight are `in_flight`, written answers waiting for a hand grade `answers_to_grade`"
    assert not [name for name in trees if name.rpartition(".")[2] == "export"], \
        "grades.csv is written by grading.grades_csv, the LMS's import file by lms.grade_import"
    lms_layouts = [name for name, tree in trees.items() if "layout" in identifiers(tree)
                   and "course.layout" not in ast.unparse(tree)]
    assert lms_layouts == [], "`layout` is the course's Layout; an LMS is an `lms`"
    executing = [name for name in trees if name.startswith("autograder.execution.")]
    pages = ("autograder.grading.formgrade", "autograder.grading.feedback_pages")   # over nbgrader's own `student`
    own = {name: {node.id for node in ast.walk(trees[name]) if isinstance(node, ast.Name)}
           | {node.arg for node in ast.walk(trees[name]) if isinstance(node, ast.arg)} for name in pages}
    assert len(executing) > 5 and [name for name in executing if "student" in identifiers(trees[name])] + \
        [name for name in pages if "student" in own[name]] == [], \
        "a student is known by `safe_id`/`safe` (inside nbgrader's folders) and `student_id` (the real id)"
    # the nbgrader course directory a job is graded in is a `workspace` (runfolder's `course-<k>/`)
    other_words = {"space", "spaces", "course_dir", "course_directory"}
    assert {name: sorted(identifiers(tree) & other_words) for name, tree in trees.items()
            if identifiers(tree) & other_words} == {}, "the nbgrader course directory a job runs in is a `workspace`"
    assert [name for name, tree in trees.items() if "template" in identifiers(tree)] == ["autograder.pages"], \
        "a `template` is a page's Jinja template; the workspace shipped to a cluster is `packed_workspace`"
    # a `run` is one `autograder grade` of an assignment; what it writes is its `run_folder` (a RunFolder), a
    # cluster's keys carry a `run_key`; a worker `grade`s a job: nothing the grader names is just `run`
    named_run = [f"{name}:{node.lineno}" for name, tree in trees.items() for node in ast.walk(tree)
                 if (isinstance(node, ast.Name) and node.id == "run") or (isinstance(node, ast.arg) and node.arg == "run")
                 or (isinstance(node, ast.FunctionDef) and node.name == "run" and name != "autograder.authoring.course_run")]
    assert named_run == [], named_run
    # the class `read` found and every step after it takes is `the_class`; `graded` is what report counts
    assert [name for name, tree in trees.items() if "graded" in identifiers(tree)] == ["autograder.grading.report"]
    # `names` are students' names (id -> name: the roster's, a group's, the class's, the report's)
    bound = {name for name, tree in trees.items() for node in ast.walk(tree)
             if (isinstance(node, ast.Name) and node.id == "names") or (isinstance(node, ast.arg) and node.arg == "names")
             or (isinstance(node, ast.FunctionDef) and node.name == "names")}
    assert bound <= {"autograder.grading.pipeline", "autograder.grading.report", "autograder.lms.roster",
                     "autograder.lms.groups"}, bound
    # `written` qualifies answers (a written-response cell's), which report lists; a waiting answer's
    # reason is status.waiting_reason, how many wait answers_to_grade, a demo class's notebooks its paths
    assert [name for name, tree in trees.items() if "written" in identifiers(tree)] == ["autograder.grading.report"]
    # `timeout` is the notebook's wall clock (GradingSettings.timeout, `timeout_s`); a cell's is
    # `cell_timeout`, the watchdog's deadline `wall_seconds`: no parameter of the grader is `timeout`
    assert [f"{name}:{node.lineno}" for name, tree in trees.items() for node in ast.walk(tree)
            if isinstance(node, ast.arg) and node.arg == "timeout"] == []


def test_every_error_of_the_grader_has_one_base_class():
    import importlib
    import inspect

    from autograder.errors import AutograderError

    errors = [item for name in modules() for _, item in inspect.getmembers(importlib.import_module(name), inspect.isclass)
              if issubclass(item, BaseException) and item.__module__ == name]
    assert len(errors) > 5
    assert [error.__qualname__ for error in errors if not issubclass(error, AutograderError)] == []


def test_exit_code_2_is_decided_in_one_place():
    trees = modules()
    returns_2 = [f"{name} line {node.lineno}" for name, tree in trees.items() for node in ast.walk(tree)
                 if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant) and node.value.value == 2]
    assert len(returns_2) == 1 and returns_2[0].startswith("autograder.cli "), returns_2


def test_grade_class_is_named_steps_none_over_50_lines():
    tree = modules()["autograder.grading.pipeline"]
    functions = {node.name: node.end_lineno - node.lineno + 1 for node in tree.body
                 if isinstance(node, ast.FunctionDef)}
    assert {"grade_class", "read", "execute", "settle", "show_hand_grades", "spread", "write"} <= set(functions)
    assert {name: lines for name, lines in functions.items() if lines > 50} == {}
