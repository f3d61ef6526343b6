"""The public API's docstrings are numpydoc: a ``Parameters`` section names every parameter.

The API reference (``docs/api``) is generated from these docstrings, so a parameter missing
here is missing from the reference too.
"""

from __future__ import annotations

import inspect
import re

import pytest

import kernelne
import kernelne.baselines
import kernelne.evaluation
import kernelne.evaluation.heuristics
import kernelne.graphs.generators

_SECTION = re.compile(r"^(\S[^\n]*)\n-{3,}\s*$", re.MULTILINE)
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][\w, *]*?)(?:\s*:.*)?$")


def documented_parameters(doc: str) -> set[str] | None:
    """Names listed in the ``Parameters`` section of a numpydoc docstring (None: no section)."""
    sections = list(_SECTION.finditer(doc))
    for i, match in enumerate(sections):
        if match.group(1).strip() != "Parameters":
            continue
        end = sections[i + 1].start() if i + 1 < len(sections) else len(doc)
        names: set[str] = set()
        for line in doc[match.end():end].splitlines():
            if not line or line[0].isspace():
                continue
            entry = _ENTRY.match(line)
            if entry:
                names.update(n.strip().lstrip("*") for n in entry.group(1).split(","))
        return names
    return None


def signature_parameters(obj) -> list[str]:
    """The parameters a caller passes: no self/cls, ``*args``/``**kwargs`` or private names."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):  # builtin exceptions' constructors
        return []
    return [
        p.name for p in sig.parameters.values()
        if p.name not in ("self", "cls") and not p.name.startswith("_")
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def public_methods(cls) -> list[str]:
    """Public methods and properties defined by ``cls`` or its kernelne base classes."""
    names = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("kernelne"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") and name not in ("__call__", "__iter__"):
                continue
            if callable(value) or isinstance(value, (property, classmethod, staticmethod)):
                names.append(f"{cls.__name__}.{name}")
    return sorted(set(names))


def _lookup(path: str):
    module_name, _, rest = path.partition(":")
    obj = __import__(module_name, fromlist=["_"])
    for part in rest.split("."):
        obj = getattr(obj, part)
    return obj


def _top_level() -> list[str]:
    return [f"kernelne:{n}" for n in kernelne.__all__ if n != "__version__"]


def _exported(module) -> list[str]:
    return [f"{module.__name__}:{n}" for n in module.__all__
            if inspect.isfunction(getattr(module, n)) or inspect.isclass(getattr(module, n))]


def _methods(module_name: str, class_names: list[str]) -> list[str]:
    out = []
    for name in class_names:
        cls = getattr(__import__(module_name, fromlist=["_"]), name)
        out += [f"{module_name}:{m}" for m in public_methods(cls)]
    return out


PUBLIC = sorted(set(
    _top_level()
    + _exported(kernelne.evaluation)
    + ["kernelne.evaluation.heuristics:evaluate_heuristics",
       "kernelne.evaluation.heuristics:heuristic_scores"]
    + _exported(kernelne.baselines)
    + ["kernelne.graphs.generators:planted_partition_sbm",
       "kernelne.graphs.generators:write_planted_partition",
       "kernelne.graphs.generators:planted_partition_graph"]
    + ["kernelne.engine.kernels:Kernel", "kernelne.engine.kernels:parse_kernel",
       "kernelne.engine.kernels:dictionary_arrays", "kernelne.graphs.datasets:Dataset"]
    + _methods("kernelne.engine.kernels", ["Kernel"])
    + _methods("kernelne.evaluation", ["LinkSplit", "ResultTable"])
    + _methods("kernelne", ["KernelNE", "Graph", "WalkCorpus"])
    + _methods("kernelne.baselines", ["DeepWalk", "Node2Vec", "LINE", "HOPE", "NetMF"])
))


def test_the_list_covers_the_estimator_methods():
    """KernelNE's own methods and the ones it inherits from kernelne's estimator base."""
    for name in ("fit", "transform", "fit_transform", "partial_fit", "save", "save_model",
                 "load_model", "load"):
        assert f"kernelne:KernelNE.{name}" in PUBLIC


@pytest.mark.parametrize("path", PUBLIC)
def test_public_name_documents_every_parameter(path):
    obj = _lookup(path)
    doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj)
    assert doc, f"{path} has no docstring"
    if isinstance(obj, property):
        return
    wanted = signature_parameters(obj)
    if not wanted:
        return
    listed = documented_parameters(doc)
    assert listed is not None, f"{path}: no 'Parameters' section (numpydoc) for {wanted}"
    missing = [p for p in wanted if p not in listed]
    assert not missing, f"{path}: parameters missing from the 'Parameters' section: {missing}"


def test_the_parser_reads_numpydoc_entries():
    doc = inspect.cleandoc("""Summary.

    Parameters
    ----------
    graph : Graph
        A graph.
    x, y : float
        Two numbers.
    **params
        Keyword arguments.

    Returns
    -------
    out : int
        Not a parameter.
    """)
    assert documented_parameters(doc) == {"graph", "x", "y", "params"}
    assert documented_parameters("Summary only.") is None


@pytest.mark.parametrize("module", [
    "kernelne.graphs.graph", "kernelne.engine.walks", "kernelne.engine.kernels",
    "kernelne.graphs.generators",
    "kernelne.baselines",
])
def test_docstring_examples_run(module):
    """The Examples sections the reference shows give the output they print."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result


KERNELNE_METHODS = ["fit", "transform", "fit_transform", "partial_fit", "save", "load",
                    "save_model", "load_model", "get_feature_names_out", "kernel_dictionary",
                    "effective_kernels", "effective_kernels_of", "simplex_weights"]


@pytest.mark.parametrize("name", KERNELNE_METHODS)
def test_each_public_method_of_kernelne_has_an_example(name):
    doc = inspect.getdoc(getattr(kernelne.KernelNE, name)) or ""
    assert re.search(r"^Examples\n-{3,}\n", doc, re.MULTILINE), name
    assert ">>> " in doc.split("Examples", 1)[1], name


@pytest.mark.parametrize("module", ["kernelne.model.kernelne", "kernelne.model.estimator",
                                    "kernelne.graphs.datasets", "kernelne.evaluation.splits"])
def test_the_estimators_examples_run(module, tmp_path, monkeypatch):
    """The examples of the estimator's methods run as written (they write files: in an empty
    folder)."""
    import doctest
    import importlib

    monkeypatch.delenv("KERNELNE_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    result = doctest.testmod(importlib.import_module(module),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, result


def documented_raises(doc: str) -> set[str]:
    """The exception names of a numpydoc ``Raises`` section (last dotted part)."""
    match = re.search(r"^Raises\n-{3,}\n(.*?)(?:\n\n\S[^\n]*\n-{3,}|\Z)", doc, re.S | re.M)
    if not match:
        return set()
    return {line.split(".")[-1].strip() for line in match.group(1).splitlines()
            if line and not line[0].isspace()}


def test_documented_raises_of_kernelne_are_what_it_raises(tmp_path):
    """Each public method called the documented failing way raises the documented type."""
    import numpy as np
    from sklearn.exceptions import NotFittedError

    from kernelne import KernelNE, load_dataset
    from kernelne.errors import InputError

    karate = load_dataset("karate").graph
    small = {"dim": 4, "walks_per_node": 2, "walk_length": 5, "workers": 1, "random_state": 0}
    fitted = KernelNE(**small).fit(karate)
    bad_file = tmp_path / "bad.txt"
    bad_file.write_text("not an embedding\n")
    cases = {  # method: (documented exception, the failing call)
        "fit": (ValueError, lambda: KernelNE(dim=0).fit(karate)),
        "fit ": (InputError, lambda: KernelNE(**small).fit(tmp_path / "missing.edges")),
        "transform": (NotFittedError, lambda: KernelNE().transform()),
        "transform ": (ValueError, lambda: fitted.transform(np.ones((2, 3)))),
        "fit_transform": (InputError, lambda: KernelNE().fit_transform(tmp_path / "no")),
        "partial_fit": (ValueError, lambda: fitted.partial_fit(karate, touched_rate=2.0)),
        "save": (NotFittedError, lambda: KernelNE().save(tmp_path / "e.npy")),
        "load": (InputError, lambda: KernelNE.load(bad_file)),
        "save_model": (NotFittedError, lambda: KernelNE().save_model(tmp_path / "m.npz")),
        "load_model": (InputError, lambda: KernelNE.load_model(bad_file)),
        "get_feature_names_out": (NotFittedError, lambda: KernelNE().get_feature_names_out()),
        "kernel_dictionary": (ValueError, lambda: KernelNE(kernel="cosine").kernel_dictionary()),
        "effective_kernels": (AttributeError, lambda: KernelNE().effective_kernels()),
    }
    for key, (exc, call) in cases.items():
        name = key.strip()
        assert exc.__name__ in documented_raises(inspect.getdoc(getattr(KernelNE, name))), key
        with pytest.raises(exc):
            call()
    assert not (tmp_path / "m.npz").exists() and not (tmp_path / "e.npy").exists()
