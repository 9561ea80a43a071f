"""Length-controlled win rates and ratings: what the judge would prefer if both answers were
equally long.

Judges, and people, favour longer answers, so a system can raise its win rate by padding. The
length-controlled figures follow AlpacaEval 2.0 (Dubois et al., 2024, "Length-Controlled
AlpacaEval: A Simple Way to Debias Automatic Evaluators", arXiv:2404.04475; the code is
``get_length_controlled_winrate`` in ``alpaca_eval/metrics/glm_winrate.py``): fit a logistic
model of the judge's preference with a term for the answers' length difference, then predict
the preference with that difference set to zero. For a battle of answers A and B to question q::

    logit P(B preferred) = theta_B - theta_A
                           + beta * tanh(delta / scale)
                           + gamma_q * ([A is the reference] - [B is the reference])

- theta: a term per system, the reference's fixed at 0 (AlpacaEval's model intercept);
- beta * tanh(delta / scale): the length term, delta = words(B) - words(A), scale the
  standard deviation of delta over the scored battles (AlpacaEval's
  ``np.tanh(std_delta_len)``): bounded, so an answer padded to any length gains at most beta;
- gamma_q: a term per question, how easily the reference answer to q is beaten (AlpacaEval's
  ``instruction_difficulty``); it cancels in a battle between two systems.

A tie counts as half a preference each way (AlpacaEval maps its tie to 0.5 too). The
length-controlled win rate of a system is its mean predicted preference over its battles
against the reference with delta = 0, i.e. the mean of sigmoid(theta_s + gamma_q); its
length-controlled rating is theta on the Elo scale, anchored as the raw ratings are.

Where this differs from AlpacaEval, and why:

- AlpacaEval fits one model per system against a fixed baseline, takes the question terms from
  a previous fit over many models, and, so that a system whose answers are all long still
  tells its length effect from its quality, adds verbose- and concise-prompted versions of the
  baseline to the fit. Here every system is fitted at once: the question terms come from all
  systems' battles against the reference, and one length coefficient is shared, so every
  system's battles tell the model what length alone buys, which is what their added baselines
  do.
- A ridge penalty in place of cross-validated L1: a Gaussian prior with standard deviation 1
  (in logits) on the question terms makes them identifiable (a constant could otherwise move
  between every theta and every gamma) and keeps a question met in one battle from explaining
  it away; a weak prior on theta and beta keeps them finite when a system wins every battle,
  or wins exactly when it is longer.
- Lengths are counted in words, as the battles record them; AlpacaEval counts characters.

The fit is Newton's method on the penalised log-likelihood, with the question terms eliminated
from each step (they meet the other parameters only through per-question sums, so the Hessian
is a small dense block beside a diagonal); the intervals come from refitting on resampled
questions (``stats.resample_counts``), so the battles of one question stay together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter.arena.battles import Battle
from ragmeter.arena.ratings import to_elo
from ragmeter.stats import percentile_interval, resample_counts

QUESTION_PRIOR = 1.0
"""Precision of the Gaussian prior on the per-question terms (standard deviation 1 logit)."""
WEAK_PRIOR = 0.01
"""Precision of the prior on the system and length terms (standard deviation 10 logits): only
there to keep them finite; negligible against a few battles' information."""
TOLERANCE = 1e-9
MAX_ITERATIONS = 100


@dataclass(frozen=True)
class LengthDesign:
    """Scored battles as the model's arrays.

    ``y`` is B's preference (1 B won, 0.5 tie, 0 A won); ``length`` is tanh(delta / scale);
    ``side`` is +1 when A is the reference, -1 when B is, 0 otherwise; ``question`` indexes
    ``questions``.
    """

    systems: list[str]
    reference: int | None
    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    length: np.ndarray
    side: np.ndarray
    question: np.ndarray
    questions: list[str]
    scale: float
    """scale, in words; 0 when no two answers differ in length (the length term is then 0)."""


class LengthUnavailable(ValueError):
    """The battles cannot give length-controlled figures (the reason is the message)."""


def length_design(battles: Sequence[Battle], reference: str) -> LengthDesign:
    """The scored battles as arrays.

    Raises:
        LengthUnavailable: no battle is scored, or some scored battle does not record its
            answers' lengths (battles files written before lengths were recorded).
    """
    scored = [b for b in battles if b.verdict is not None]
    if not scored:
        raise LengthUnavailable("no scored battles")
    missing = [b.pair_id for b in scored if b.words_a is None or b.words_b is None]
    if missing:
        raise LengthUnavailable(
            f"{len(missing)} of {len(scored)} scored battles (e.g. {missing[0]!r}) do not "
            "record their answers' lengths: judge them again with this version"
        )
    systems = sorted({name for b in scored for name in (b.system_a, b.system_b)})
    index = {name: n for n, name in enumerate(systems)}
    questions = sorted({b.question_id or b.pair_id for b in scored})
    asked = {q: n for n, q in enumerate(questions)}
    delta = np.array([(b.words_b or 0) - (b.words_a or 0) for b in scored], dtype=float)
    scale = float(delta.std(ddof=1)) if len(delta) > 1 else 0.0
    return LengthDesign(
        systems=systems,
        reference=index.get(reference),
        a=np.array([index[b.system_a] for b in scored]),
        b=np.array([index[b.system_b] for b in scored]),
        y=np.array([(b.verdict or 0) / 2 + 0.5 for b in scored]),
        length=np.tanh(delta / scale) if scale > 0 else np.zeros_like(delta),
        side=np.array(
            [(b.system_a == reference) - (b.system_b == reference) for b in scored], dtype=float
        ),
        question=np.array([asked[b.question_id or b.pair_id] for b in scored]),
        questions=questions,
        scale=scale,
    )


@dataclass(frozen=True)
class LengthFit:
    theta: np.ndarray
    """Per system (the reference's 0)."""
    beta: float
    gamma: np.ndarray
    """Per question."""


def fit_length_model(
    design: LengthDesign, weights: np.ndarray | None = None, start: LengthFit | None = None
) -> LengthFit:
    """The penalised maximum-likelihood fit, each battle counted ``weights`` times (default 1).

    Dense parameters c = (theta of every system but the reference, beta); the question terms
    gamma meet them only through per-question sums, so each Newton step solves the
    (K+1)-square Schur complement and then gamma question by question.
    """
    n_sys, n_q = len(design.systems), len(design.questions)
    free = [s for s in range(n_sys) if s != design.reference]
    column = {s: k for k, s in enumerate(free)}
    x = np.zeros((len(design.y), len(free) + 1))
    rows = np.arange(len(design.y))
    for systems, sign in ((design.b, 1.0), (design.a, -1.0)):
        keep = systems != (design.reference if design.reference is not None else -1)
        x[rows[keep], [column[s] for s in systems[keep]]] += sign
    x[:, -1] = design.length
    w = np.ones(len(design.y)) if weights is None else np.asarray(weights, dtype=float)
    q, z, y = design.question, design.side, design.y
    c = np.zeros(x.shape[1])
    gamma = np.zeros(n_q)
    if start is not None:
        c = np.append(start.theta[free], start.beta)
        gamma = start.gamma.copy()

    def objective(c: np.ndarray, gamma: np.ndarray) -> float:
        eta = x @ c + z * gamma[q]
        loglik = w * (y * -np.logaddexp(0, -eta) + (1 - y) * -np.logaddexp(0, eta))
        return float(loglik.sum() - WEAK_PRIOR / 2 * c @ c - QUESTION_PRIOR / 2 * gamma @ gamma)

    current = objective(c, gamma)
    for _ in range(MAX_ITERATIONS):
        p = 1 / (1 + np.exp(-(x @ c + z * gamma[q])))
        r, v = w * (y - p), w * p * (1 - p)
        g_c = x.T @ r - WEAK_PRIOR * c
        g_g = np.bincount(q, z * r, n_q) - QUESTION_PRIOR * gamma
        h_cc = (x * v[:, None]).T @ x + WEAK_PRIOR * np.eye(len(c))
        h_cg = np.stack([np.bincount(q, v * z * x[:, k], n_q) for k in range(len(c))])
        h_gg = np.bincount(q, v * z * z, n_q) + QUESTION_PRIOR
        scaled = h_cg / h_gg
        step_c = np.linalg.solve(h_cc - scaled @ h_cg.T, g_c - scaled @ g_g)
        step_g = (g_g - h_cg.T @ step_c) / h_gg
        size = 1.0
        while True:  # the objective is concave, so a halved step always gains in the end
            trial = objective(c + size * step_c, gamma + size * step_g)
            if trial >= current or size < 1e-6:
                break
            size /= 2
        c, gamma, current = c + size * step_c, gamma + size * step_g, trial
        if size * max(np.abs(step_c).max(), np.abs(step_g).max(initial=0)) < TOLERANCE:
            break
    theta = np.zeros(n_sys)
    theta[free] = c[:-1]
    return LengthFit(theta=theta, beta=float(c[-1]), gamma=gamma)


def controlled_wins(
    design: LengthDesign, fit: LengthFit, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per system, against the reference: the length-controlled win rate (the mean of
    sigmoid(theta_s + gamma_q) over its battles with the reference) and the raw one (ties as
    halves), over the battles' ``weights``; NaN for a system without battles against the
    reference."""
    n_sys = len(design.systems)
    w = np.ones(len(design.y)) if weights is None else np.asarray(weights, dtype=float)
    against = design.side != 0
    system = np.where(design.side > 0, design.b, design.a)[against]
    w = w[against]
    # Seen from the system: B's preference when the reference is A, else its complement.
    raw = np.where(design.side[against] > 0, design.y[against], 1 - design.y[against])
    controlled = 1 / (1 + np.exp(-(fit.theta[system] + fit.gamma[design.question[against]])))
    total = np.bincount(system, w, n_sys)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (
            np.bincount(system, w * controlled, n_sys) / total,
            np.bincount(system, w * raw, n_sys) / total,
        )


@dataclass(frozen=True)
class Estimate:
    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class LengthControlled:
    """Per system: the length-controlled rating and win rate, and the raw win rate with ties
    as halves (the figure the length-controlled one corrects), each with its interval."""

    systems: list[str]
    rating: dict[str, Estimate]
    win: dict[str, Estimate]
    """Against the reference; systems that never met it are left out."""
    win_raw: dict[str, Estimate]
    length_coefficient: Estimate
    """beta: the logit a maximally longer answer gains (tanh saturates at 1)."""
    scale: float
    """scale, in words."""
    questions: int


def length_controlled(
    battles: Sequence[Battle],
    reference: str,
    *,
    anchor: str = "mean",
    rounds: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> LengthControlled:
    """The length-controlled figures with percentile intervals from ``rounds`` refits on
    questions resampled with replacement (``rounds`` = 0: no intervals).

    Raises:
        LengthUnavailable: see :func:`length_design`.
    """
    design = length_design(battles, reference)
    fit = fit_length_model(design)
    rating = to_elo(fit.theta, design.systems, anchor)
    win, raw = controlled_wins(design, fit)
    n_sys = len(design.systems)
    draws = np.full((rounds, 2 * n_sys + n_sys + 1), np.nan)
    if rounds > 0:
        counts = resample_counts(len(design.questions), rounds=rounds, seed=seed)
        for r, per_question in enumerate(counts):
            weights = per_question[design.question].astype(float)
            refit = fit_length_model(design, weights, start=fit)
            played = np.bincount(design.a, weights, n_sys) + np.bincount(design.b, weights, n_sys)
            elo = np.where(played > 0, to_elo(refit.theta, design.systems, anchor), np.nan)
            draws[r] = np.concatenate([*controlled_wins(design, refit, weights), elo, [refit.beta]])
    low, high = percentile_interval(draws, confidence)

    def estimate(value: float, at: int) -> Estimate:
        def finite(x: float) -> float | None:
            return None if np.isnan(x) else float(x)

        return Estimate(finite(value), finite(low[at]), finite(high[at]))

    met = [s for s in range(n_sys) if not np.isnan(win[s])]
    return LengthControlled(
        systems=design.systems,
        rating={name: estimate(rating[s], 2 * n_sys + s) for s, name in enumerate(design.systems)},
        win={design.systems[s]: estimate(win[s], s) for s in met},
        win_raw={design.systems[s]: estimate(raw[s], n_sys + s) for s in met},
        length_coefficient=estimate(fit.beta, 3 * n_sys),
        scale=design.scale,
        questions=len(design.questions),
    )
