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
    """A Dask worker unpickles ``kernelne.partitioned.bucket_task``: the package's names are
    loaded on first use, so it imports neither the estimator nor scikit-learn (about 65 MiB
    of its peak memory)."""
    code = ("import sys, kernelne.partitioned; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn' "
            "or m in ('kernelne.model', 'kernelne.tune')))")
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
