"""The package ``outbox`` is the folder ``src/``: the layers keep their folders (``src/domain``,
``src/application``, ``src/adapters``, ``src/entrypoints``) and install as ``outbox.domain``…,
with nothing else of ours at the top of site-packages. Every folder is listed, those holding
only data (migrations, templates, the console's assets) too, so that setuptools ships their
files as package data; everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    package_dir={"outbox": "src"},
    packages=[
        "outbox",
        *(f"outbox.{name}" for name in find_namespace_packages("src", exclude=["*__pycache__"])),
    ],
)
