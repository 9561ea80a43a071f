"""RAG-QA Arena (Han et al., 2024): rank RAG systems by pairwise judgements of their answers.

The steps, one module each:

* ``passages`` / ``retrieval`` / ``generate``: answer questions as a system under test, from BM25
  top-k passages of at most 100 words, with the paper's answer prompt;
* ``designs``: which pairs to judge (every system against the reference, and/or complete pairs);
* ``judge``: the paper's pairwise rubric, judged in both orders (or one seeded random order),
  committed to a resumable store as each judgement completes (``battles``);
* ``claim_judge``: the other method, each pair decided from its two answers' claim tables
  against a reference answer and the passages (``--method claims``);
* ``ratings`` / ``leaderboard``: win and win+tie rates against the reference, "no answer"
  ratios, and Bradley-Terry Elo ratings, all with bootstrap 95% intervals;
* ``agreement``: Cohen's kappa, Pearson and accuracy of the judge against human labels.

Retrieval needs the ``arena`` extra (``bm25s``); the rest needs only the core dependencies.
"""

from ragmeter.arena.agreement import AgreementReport, agreement, agreement_report, measure_agreement
from ragmeter.arena.battles import Battle, OrderVerdict, read_battles
from ragmeter.arena.data import (
    Pair,
    Question,
    SystemAnswers,
    is_no_answer,
    load_answers,
    load_corpus,
    load_expert_pairwise,
    load_lfrqa,
    load_pairs,
    load_questions,
)
from ragmeter.arena.designs import complete_pairs, design_pairs, reference_pairs
from ragmeter.arena.generate import generate_answers
from ragmeter.arena.judge import PAIRWISE, judge_pair, judge_pairs
from ragmeter.arena.leaderboard import Leaderboard, build_leaderboard, win_rates
from ragmeter.arena.ratings import elo_ratings
from ragmeter.bradley_terry import fit_bradley_terry

__all__ = [
    "PAIRWISE",
    "AgreementReport",
    "Battle",
    "Leaderboard",
    "OrderVerdict",
    "Pair",
    "Question",
    "SystemAnswers",
    "agreement",
    "agreement_report",
    "build_leaderboard",
    "complete_pairs",
    "design_pairs",
    "elo_ratings",
    "fit_bradley_terry",
    "generate_answers",
    "is_no_answer",
    "judge_pair",
    "judge_pairs",
    "load_answers",
    "load_corpus",
    "load_expert_pairwise",
    "load_lfrqa",
    "load_pairs",
    "load_questions",
    "measure_agreement",
    "read_battles",
    "reference_pairs",
    "win_rates",
]
