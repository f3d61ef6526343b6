"""A content-addressed cache folder for the reproduce grid.

A key is the hash of everything that determines a result (dataset name and file sha256,
method, settings, seed; for scores also the embedding's key and the evaluation settings).
Embeddings are stored as ``embeddings/KEY.npy`` with ``KEY.json`` metadata, scores as
``scores/KEY.json``. Every write goes to a temporary file renamed into place, so an interrupted
run leaves only complete entries and the next run resumes from them.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.errors import InputError
from kernelne.outputs import atomic_path


def make_key(*parts: Any) -> str:
    """A stable 20-hex-digit hash of JSON-serialisable ``parts``."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@lru_cache(maxsize=64)
def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (memoised per path)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Cache:
    """The cache folder (created on first use)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        try:
            for sub in ("embeddings", "scores", "splits"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the cache folder: {exc.strerror}", root) from None

    def has_embedding(self, key: str) -> bool:
        """Whether a complete, readable entry exists; a corrupt one is reported and removed
        (so that it is computed again)."""
        meta = self.root / "embeddings" / f"{key}.json"
        if not meta.is_file():
            return False
        array = self.root / "embeddings" / f"{key}.npy"
        try:
            json.loads(meta.read_text())
            mapped = np.load(array, mmap_mode="r", allow_pickle=False)  # checks the size
            if mapped.ndim != 2:
                raise ValueError(f"array of shape {mapped.shape} is not a matrix")
            del mapped
        except (OSError, ValueError, EOFError) as exc:
            _discard(f"corrupt cached embedding ({exc})", meta, array)
            return False
        return True

    def load_embedding(self, key: str) -> np.ndarray:
        return np.load(self.root / "embeddings" / f"{key}.npy")

    def embedding_meta(self, key: str) -> dict:
        return json.loads((self.root / "embeddings" / f"{key}.json").read_text())

    def save_embedding(self, key: str, vectors: np.ndarray, meta: dict) -> None:
        """Store the array, then its metadata (whose presence marks the entry complete)."""
        with atomic_path(self.root / "embeddings" / f"{key}.npy") as tmp:
            with open(tmp, "wb") as fh:
                np.save(fh, np.asarray(vectors, dtype=np.float32))
        self._write_json(self.root / "embeddings" / f"{key}.json", meta)

    def scores(self, key: str) -> dict | None:
        """The cached scores, or None (a corrupt file is reported, removed, recomputed)."""
        path = self.root / "scores" / f"{key}.json"
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            return record
        except (OSError, ValueError) as exc:
            _discard(f"corrupt cached scores ({exc})", path)
            return None

    def save_scores(self, key: str, record: dict) -> None:
        self._write_json(self.root / "scores" / f"{key}.json", record)

    def split_folder(self, key: str) -> Path:
        return self.root / "splits" / key

    def valid_split(self, key: str) -> bool:
        """Whether a readable split is cached under ``key`` (a corrupt one is removed)."""
        from kernelne.evaluation.splits import LinkSplit

        folder = self.split_folder(key)
        if not (folder / "split.json").is_file():
            return False
        try:
            LinkSplit.load(folder)
        except InputError as exc:
            _discard(f"corrupt cached split ({exc.problem})", *folder.glob("*"))
            return False
        return True

    @staticmethod
    def _write_json(path: Path, data: dict) -> None:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _discard(reason: str, *paths: Path) -> None:
    """Warn that a cache entry is unusable (naming its file), then delete it."""
    import warnings

    warnings.warn(f"{paths[0]}: {reason}: computing it again", stacklevel=3)
    for path in paths:
        path.unlink(missing_ok=True)
