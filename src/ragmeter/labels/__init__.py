"""People label what a run judged, in a page served from this machine (``ragmeter label``).

- ``store``: the append-only log of labels in the run folder (``labels.sqlite``);
- ``items``: the items to label (samples on a metric's scale, or faithfulness's claims) and
  their order;
- ``session``: what the page shows and does, read from and written to the log;
- ``server``: the page and its HTTP endpoints;
- ``export``: the labels as ``calibrate``, ``tune`` and ``report`` read them, or as files.
"""

from ragmeter.labels.export import export, has_ratings, run_claims, run_ratings
from ragmeter.labels.session import LabelSession
from ragmeter.labels.store import LABELS_FILE, Event, ItemKey, LabelStore, fold, open_labels

__all__ = [
    "LABELS_FILE",
    "Event",
    "ItemKey",
    "LabelSession",
    "LabelStore",
    "export",
    "fold",
    "has_ratings",
    "open_labels",
    "run_claims",
    "run_ratings",
]
