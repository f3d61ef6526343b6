"""``python -m kernelne``: the ``kernelne`` command line (:func:`kernelne.cli.main`)."""

from __future__ import annotations

import sys

from kernelne.cli import main

if __name__ == "__main__":
    sys.exit(main())
