"""Build hook: the wheel carries the user guides (``docs/*.md``) as ``kernelne/_docs/``, so
that ``kernelne docs NAME`` and the messages that name a guide work from an installed wheel.
Everything else is declared in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class build_py_with_docs(build_py):
    def run(self):
        super().run()
        source = Path(__file__).resolve().parent / "docs"
        target = Path(self.build_lib) / "kernelne" / "_docs"
        target.mkdir(parents=True, exist_ok=True)
        for page in sorted(source.glob("*.md")):
            shutil.copyfile(page, target / page.name)


setup(cmdclass={"build_py": build_py_with_docs})
