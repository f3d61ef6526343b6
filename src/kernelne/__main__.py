"""``python -m kernelne``: the ``kernelne`` command line (:func:`kernelne.cli.app.main`)."""

from __future__ import annotations

import sys

from kernelne.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
