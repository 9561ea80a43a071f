"""Self-tests a user runs on their own judge: fixed cases whose honest outcome is known, scored
by the real metrics, to show how the judge behaves before its scores are trusted.

- ``ragmeter.selftest.injection``: prompt-injection cases, and the attack success rate
  (``ragmeter selftest injection``);
- ``ragmeter.selftest.gaming``: answers that game a metric without speaking to the judge, and
  the gaming success rate (``ragmeter selftest gaming``);
- ``ragmeter.selftest.suite``: what both share, the scoring of cases and the rates with their
  Wilson intervals.
"""
