"""The package ``outbox`` is the folder ``src/``: the layers keep their folders (``src/domain``,
``src/application``, ``src/adapters``, ``src/entrypoints``) and install as ``outbox.domain``…,
with nothing else of ours at the top of site-packages. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    package_dir={"outbox": "src"},
    packages=["outbox", *(f"outbox.{name}" for name in find_packages("src"))],
)
