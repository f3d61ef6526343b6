"""The fast edge-list reader hands pyarrow no Python object (the abort at exit after a
graph read)."""

from __future__ import annotations


def test_fast_reader_hands_pyarrow_no_python_object(tmp_path, monkeypatch):
    """pyarrow's CSV workers may release the reader's input after ``read_csv`` returned; a
    Python input (``io.BytesIO``) then needs the GIL, which aborts the process ("terminate
    called without an active exception", exit 134) if the interpreter is shutting down."""
    import pyarrow as pa
    from pyarrow import csv

    from kernelne.graphs.graph import load_graph

    seen = []
    real = csv.read_csv

    def spy(source, *args, **kwargs):
        seen.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(csv, "read_csv", spy)
    for text in ("1 2\n2 3\n", "a b\nb c\n"):
        path = tmp_path / "g.txt"
        path.write_text(text)
        assert load_graph(path).n_edges == 2
    assert seen and all(isinstance(s, pa.BufferReader) for s in seen), seen
