"""Build step of the bonsai Python package.

Nothing is compiled: the package is ctypes over libbonsai_host's C API. This
script copies the already built libraries from a bonsai build tree into the
package, laid out so that the host finds its plugins by itself:

    bonsai_lm/_libs/libbonsai_host.so
    bonsai_lm/_libs/bonsai/plugins/libbonsai_cpu.so   (and every other plugin)

The build tree is ``$BONSAI_BUILD_DIR``, or ``../build`` next to this folder
(the repository's default build folder). Its intermediate files go to
``<build tree>/python-build``, not into the source folder. Wheels are marked
platform-specific (``py3-none-<platform>``): they hold native code, but no
Python extension, so one wheel serves every Python 3 of that platform.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BUILD_DIR_ENV = "BONSAI_BUILD_DIR"


class BuildTreeError(SystemExit):
    """The build tree is missing or incomplete (stops the build with its message)."""


def build_tree() -> Path:
    """The bonsai build tree to take the libraries from.

    ``$BONSAI_BUILD_DIR`` must be absolute: pip runs this script from its own
    folder, not from where pip was started.
    """
    env = os.environ.get(BUILD_DIR_ENV)
    if not env:
        return (HERE.parent / "build").resolve()
    if not os.path.isabs(env):
        raise BuildTreeError(f"bonsai: {BUILD_DIR_ENV} must be an absolute path, not {env!r} "
                             f"(pip runs the build from {HERE}); e.g. "
                             f"{BUILD_DIR_ENV}=$PWD/{env}")
    return Path(env).resolve()


def find_libraries(tree: Path) -> tuple[Path, list[Path]]:
    """libbonsai_host.so and the plugins of `tree`; a clear error when they are missing."""
    how = (f"build them first (cmake -S . -B build -G Ninja && cmake --build build --target "
           f"bonsai_host bonsai_cpu), or set {BUILD_DIR_ENV} to the build tree that has them")
    if not tree.is_dir():
        raise BuildTreeError(f"bonsai: no build tree at {tree} "
                             f"({BUILD_DIR_ENV}={os.environ.get(BUILD_DIR_ENV, '(not set)')}); "
                             f"{how}")
    host = tree / "lib" / "libbonsai_host.so"
    if not host.exists():
        raise BuildTreeError(f"bonsai: {host} is missing; {how}")
    plugin_dir = tree / "lib" / "bonsai" / "plugins"
    plugins = sorted(plugin_dir.glob("libbonsai_*.so"))
    if not plugins:
        raise BuildTreeError(f"bonsai: no plugin (libbonsai_*.so) in {plugin_dir}; {how}")
    return host, plugins


class build_py_with_libraries(build_py):
    """build_py, then the libraries copied into bonsai_lm/_libs."""

    def run(self) -> None:
        host, plugins = find_libraries(build_tree())  # first: a missing tree leaves no files
        super().run()
        target = Path(self.build_lib) / "bonsai_lm" / "_libs"
        if target.exists():
            shutil.rmtree(target)
        plugin_target = target / "bonsai" / "plugins"
        plugin_target.mkdir(parents=True)
        # One file, not the .so -> .so.0 -> .so.0.1.0 chain: a wheel cannot
        # hold symbolic links, and the package loads it by this path.
        shutil.copyfile(host.resolve(), target / "libbonsai_host.so")
        for plugin in plugins:
            shutil.copyfile(plugin.resolve(), plugin_target / plugin.name)
        for library in target.rglob("*.so"):
            library.chmod(0o755)
        print(f"bonsai: bundled {host} and {len(plugins)} plugin(s) "
              f"({', '.join(p.name for p in plugins)})")


class BinaryDistribution(Distribution):
    """The package holds native libraries: never a pure-Python distribution."""

    def has_ext_modules(self) -> bool:
        return True


cmdclass: dict[str, type] = {"build_py": build_py_with_libraries}
try:
    from wheel.bdist_wheel import bdist_wheel

    class bdist_wheel_platform(bdist_wheel):
        """Wheels tagged py3-none-<platform>: native code, no Python ABI dependency."""

        def finalize_options(self) -> None:
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self) -> tuple[str, str, str]:
            _, _, platform = super().get_tag()
            return "py3", "none", platform

    cmdclass["bdist_wheel"] = bdist_wheel_platform
except ImportError:  # no wheel package: installing from the tree still works
    pass

# Intermediate files go to the build tree (when there is one: without it
# build_py stops with the error of find_libraries).
options = {}
if build_tree().is_dir():
    build_base = build_tree() / "python-build"
    build_base.mkdir(exist_ok=True)
    options["build"] = {"build_base": str(build_base)}
    options["egg_info"] = {"egg_base": str(build_base)}


def version() -> str:
    """bonsai_lm/_version.py's __version__, read without importing the package."""
    scope: dict[str, str] = {}
    exec((HERE / "bonsai_lm" / "_version.py").read_text(encoding="utf-8"), scope)
    return scope["__version__"]


setup(
    version=version(),
    packages=["bonsai_lm"],
    package_data={"bonsai_lm": ["py.typed"]},
    include_package_data=False,
    cmdclass=cmdclass,
    distclass=BinaryDistribution,
    options=options,
)
