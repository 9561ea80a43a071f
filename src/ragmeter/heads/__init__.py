"""Learning from people: verdicts read by heads fitted on people's labels, and people's ratings
of a run.

- ``reading``: a verdict head and how a judge's Yes/No replies are read by one (the judge
  option ``heads=``); the heads shipped with ragmeter are ``bundled.json``;
- ``fitting``: fitting a head on labelled verdicts, and measuring it out of fold;
- ``verifier``: the claim verifier's training set (labelled claims from many sources) and its
  leave-one-source-out measurement;
- ``tuning``: the ``ragmeter tune`` workflow (a team's own labels, over a run's verdicts);
- ``ratings``: people's ratings of a run's samples, read and checked;
- ``ppi``: prediction-powered inference, people's ratings correcting the judge's mean.

Reading needs only numpy; fitting needs scipy (the ``tune`` extra).
"""

from ragmeter.heads.reading import (
    DEFAULT_HEADS,
    HEADS_OPTION,
    Head,
    Heads,
    HeadsError,
    Read,
    WithHeads,
    bundled_heads,
    heads_for,
    logit,
    sigmoid,
    with_heads,
)

__all__ = [
    "DEFAULT_HEADS",
    "HEADS_OPTION",
    "Head",
    "Heads",
    "HeadsError",
    "Read",
    "WithHeads",
    "bundled_heads",
    "heads_for",
    "logit",
    "sigmoid",
    "with_heads",
]
