"""Self-tests a user runs on their own judge: fixed cases whose honest outcome is known, scored
by the real metrics, to show how the judge behaves before its scores are trusted.

- ``ragmeter.selftest.injection``: prompt-injection cases, and the attack success rate
  (``ragmeter selftest injection``).
"""
