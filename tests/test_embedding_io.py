"""The embedding reader checks the header's counts and duplicate ids."""

from __future__ import annotations

import pytest


def test_embedding_reader_checks_header_count_and_duplicates(tmp_path):
    from kernelne.embedding_io import load_embedding
    from kernelne.errors import InputError

    (tmp_path / "a.txt").write_text("3 2\n0 1 2\n1 3 4\n")
    with pytest.raises(InputError, match=r"a.txt:1: the header announces 3 vectors"):
        load_embedding(tmp_path / "a.txt")
    (tmp_path / "b.txt").write_text("2 2\nx 1 2\nx 3 4\n")
    with pytest.raises(InputError, match=r"b.txt:3: node 'x' appears twice"):
        load_embedding(tmp_path / "b.txt")
    (tmp_path / "c.txt").write_text("2 2\n0 1 2\n1 3\n")
    with pytest.raises(InputError, match=r"expected a node id and 2 numbers \(3 fields\)"):
        load_embedding(tmp_path / "c.txt")
