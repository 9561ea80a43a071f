"""Learning from people: verdict heads fitted on people's labels, and people's ratings of a run.

- ``fitting``: fitting a head on labelled verdicts, and measuring it out of fold;
- ``verifier``: the claim verifier's training set (labelled claims from many sources) and its
  leave-one-source-out measurement;
- ``tuning``: the ``ragmeter tune`` workflow (a team's own labels, over a run's verdicts);
- ``curve``: what a number of a team's labels bought on the sources measured, read for ``tune``;
- ``ratings``: people's ratings of a run's samples, read and checked;
- ``ppi``: prediction-powered inference, people's ratings correcting the judge's mean.

A head is read where the judge is (``ragmeter.judges.heads``, the judge option ``heads=``),
with the heads shipped with ragmeter beside it; fitting one needs scipy (the ``tune`` extra).
"""
