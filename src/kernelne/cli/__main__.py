"""``python -m kernelne.cli``, the path of 0.2.0: the ``kernelne`` command line."""

import sys

from kernelne.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
