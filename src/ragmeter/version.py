"""The installed package's version, from its metadata (a leaf module: importing it imports
nothing else of ragmeter, so any module may record the version without an import loop)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ragmeter")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
