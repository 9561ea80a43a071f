"""Criteria written in words: yes/no questions, levels and checklists, scored by the judge.

- ``definition``: what a criterion is (``Criterion``, ``Level``, ``Requirement``);
- ``asking``: how the judge is asked it, and how its probabilities become a score;
- ``metric``: a criterion as a metric (``CriterionMetric``);
- ``files``: criteria from a TOML file or a ``--criterion NAME=QUESTION``;
- ``library``: ready criteria, usable by name.
"""

from ragmeter.criteria.definition import Criterion, Example, Level, Requirement
from ragmeter.criteria.files import CriteriaError, load_criteria, parse_criterion_flag
from ragmeter.criteria.library import LIBRARY
from ragmeter.criteria.metric import CriterionMetric

__all__ = [
    "LIBRARY",
    "CriteriaError",
    "Criterion",
    "CriterionMetric",
    "Example",
    "Level",
    "Requirement",
    "load_criteria",
    "parse_criterion_flag",
]
