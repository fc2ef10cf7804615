"""The package's version: the bonsai project's (project() in CMakeLists.txt)."""

__version__ = "0.1.0"
