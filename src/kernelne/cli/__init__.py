"""The ``kernelne`` command: the only code that reads ``argv``, prints summaries and picks exit
codes.

``app`` builds the parser and runs a subcommand; ``grammar`` holds the help formatter and shared
argument types; ``options`` the model options and fit summaries shared by the commands that fit;
one module per further subcommand (``evaluate``, ``reproduce``, ``tune``, ``plot``,
``datasets``, ``generate``, ``docs``, ``demo``). It may import
every other part of the package; nothing in the package imports it (a test holds this).
"""

from kernelne.cli.app import main

__all__ = ["main"]
