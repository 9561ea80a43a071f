"""Reports and comparisons of run folders: open any folder a command wrote (``folders``),
compare two runs (``compare``), and write a self-contained HTML report (``html``, with the
Vega-Lite charts of ``charts``; ``pip install 'ragmeter[report]'``)."""

from ragmeter.viewer.compare import Comparison, compare_runs
from ragmeter.viewer.folders import OpenedRun, RunFolderError, open_run
from ragmeter.viewer.html import write_report

__all__ = ["Comparison", "OpenedRun", "RunFolderError", "compare_runs", "open_run", "write_report"]
