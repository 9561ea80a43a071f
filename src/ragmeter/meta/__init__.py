"""Meta-evaluation: how often ragmeter's judgments agree with people's."""
