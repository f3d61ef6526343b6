"""The package's import map has no circles (modules that import each other, directly or not)."""

import subprocess
import sys

import grimp
import pytest


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    adj = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in adj[v]:
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

    for module in sorted(adj):
        if module not in index:
            visit(module)
    return found


def test_no_import_circles():
    graph = grimp.build_graph("kernelne")
    assert _cycles(graph) == []


def test_cycle_finder_sees_a_circle():
    class Fake:
        modules = {"a", "b", "c"}

        @staticmethod
        def find_modules_directly_imported_by(m):
            return {"a": {"b"}, "b": {"a"}, "c": {"a"}}[m]

    assert _cycles(Fake()) == [["a", "b"]]


def test_a_bucket_worker_does_not_load_the_estimator_or_sklearn():
    """A Dask worker unpickles ``kernelne.partitioned.driver.bucket_task``: the package's names are
    loaded on first use, so it imports neither the estimator nor scikit-learn (about 65 MiB
    of its peak memory)."""
    code = ("import sys, kernelne.partitioned.driver; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn' "
            "or m in ('kernelne.model.kernelne', 'kernelne.tune.search', 'kernelne.tune.space')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_the_package_names_load_on_first_use():
    import kernelne

    assert set(kernelne.__all__) - {"__version__"} == set(kernelne._WHERE)
    for name in kernelne.__all__:
        assert getattr(kernelne, name) is not None
    assert set(kernelne.__all__) <= set(dir(kernelne)) and "__file__" in dir(kernelne)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        kernelne.nope  # noqa: B018


def test_the_evaluation_names_load_on_first_use():
    import kernelne.evaluation as evaluation
    from kernelne.evaluation import classification, linkpred

    assert set(evaluation.__all__) == set(evaluation._WHERE)
    for name in evaluation.__all__:
        assert getattr(evaluation, name) is not None
    assert evaluation.OPERATORS is linkpred.OPERATORS
    assert evaluation.PAPER_RATIOS is classification.PAPER_RATIOS
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        evaluation.nope  # noqa: B018


# --- the layer rules (CONTRIBUTING.md, "Layout"): what each wing may import -------------------

BASE = {"kernelne", "kernelne._version", "kernelne.errors", "kernelne.outputs",
        "kernelne.embedding_io", "kernelne.memory", "kernelne.parallel"}


def _imports_from(graph, package: str) -> set[tuple[str, str]]:
    """(importer, imported) for every direct import made by a module of ``package``."""
    return {(m, t) for m in graph.modules if m == package or m.startswith(package + ".")
            for t in graph.find_modules_directly_imported_by(m)}


def _in(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


@pytest.fixture(scope="module")
def full_graph():
    return grimp.build_graph("kernelne", include_external_packages=True)


def test_nothing_imports_the_cli(full_graph):
    importers = {m for m in full_graph.modules if not _in(m, "kernelne.cli")
                 for t in full_graph.find_modules_directly_imported_by(m)
                 if _in(t, "kernelne.cli")}
    assert importers <= {"kernelne.__main__"}


def test_the_engine_imports_no_model_tune_cli_or_sklearn(full_graph):
    bad = {(m, t) for m, t in _imports_from(full_graph, "kernelne.engine")
           if _in(t, "kernelne.model", "kernelne.partitioned", "kernelne.tune", "kernelne.cli",
                  "kernelne.evaluation", "kernelne.baselines", "kernelne.reproduce", "sklearn")}
    assert bad == set()


def test_the_partitioned_driver_imports_only_engine_graphs_and_base(full_graph):
    bad = {(m, t) for m, t in _imports_from(full_graph, "kernelne.partitioned")
           if _in(t, "kernelne") and not _in(t, "kernelne.partitioned", "kernelne.engine",
                                              "kernelne.graphs") and t not in BASE}
    assert bad == set()


def test_the_layer_rules_see_a_breach():
    class Fake:
        modules = {"kernelne.engine.walks", "kernelne.model.kernelne", "sklearn"}

        @staticmethod
        def find_modules_directly_imported_by(m):
            return {"kernelne.engine.walks": {"sklearn", "kernelne.model.kernelne"}}.get(m, set())

    assert _imports_from(Fake(), "kernelne.engine") == {
        ("kernelne.engine.walks", "sklearn"), ("kernelne.engine.walks", "kernelne.model.kernelne")}


def test_the_module_paths_of_0_2_0_still_import(recwarn):
    """Every deprecated module path resolves to the module that now holds its code."""
    import importlib

    import kernelne

    for old, new in kernelne.MOVED_MODULES.items():
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=f"import {new}"):
            module = importlib.import_module(old)
        assert module is importlib.import_module(new)


def test_the_graphs_import_no_embedding_files(full_graph):
    """``embedding_io`` reads graph records (``kernelne.graphs``): the graphs' modules write
    through the base module below both (``kernelne.outputs``), never through it."""
    bad = {(m, t) for m, t in _imports_from(full_graph, "kernelne.graphs")
           if _in(t, "kernelne.embedding_io", "kernelne.model", "kernelne.evaluation",
                  "kernelne.cli", "kernelne.tune", "kernelne.reproduce", "kernelne.baselines")}
    assert bad == set()
