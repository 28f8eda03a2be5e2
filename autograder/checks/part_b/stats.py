"""Goodness of fit for the sampler, NumPy and the standard library only (no scipy).

``chi2_sf`` is the chi-square survival function through the regularized upper incomplete
gamma function Q(df/2, x/2) (series below a + 1, Lentz's continued fraction above, as in
Numerical Recipes). ``fit_test`` pools cells whose expected count is small, because the
chi-square approximation of Pearson's statistic is poor there, and that matters at the tiny
significance levels used here.
"""
import math

import numpy as np

MIN_EXPECTED = 100.0  # per pooled cell: the chi-square tail is then accurate far out


def _gamma_q(a, x):
    """Regularized upper incomplete gamma Q(a, x) for a > 0, x >= 0."""
    if x <= 0:
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:  # series for P(a, x)
        term = total = 1.0 / a
        ap = a
        for _ in range(10_000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300  # continued fraction for Q(a, x)
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return math.exp(log_front) * h


def chi2_sf(x, df):
    """P(X >= x) for X ~ chi-square(df)."""
    return _gamma_q(df / 2.0, x / 2.0)


def _pool(observed, expected):
    """Merge the cells with small expected counts (smallest first) into one cell."""
    order = np.argsort(expected)
    obs, exp = [], []
    rest_o = rest_e = 0.0
    for i in order:
        if rest_e < MIN_EXPECTED:
            rest_o += observed[i]
            rest_e += expected[i]
        else:
            obs.append(observed[i])
            exp.append(expected[i])
    if rest_e > 0:
        obs.append(rest_o)
        exp.append(rest_e)
    return np.array(obs), np.array(exp)


def fit_test(draws, probs):
    """Pearson's chi-square test of integer ``draws`` against the distribution ``probs``.

    Returns ``(p_value, statistic, df, observed_counts)``; draws outside the support of
    ``probs`` must be checked by the caller first (they are not counted here).
    """
    probs = np.asarray(probs, dtype=np.float64)
    counts = np.bincount(np.asarray(draws, dtype=np.int64), minlength=len(probs))[: len(probs)]
    support = probs > 0
    n = counts[support].sum()
    observed, expected = _pool(counts[support].astype(float), n * probs[support] / probs[support].sum())
    df = len(observed) - 1
    if df < 1:
        return 1.0, 0.0, 0, counts
    stat = float(((observed - expected) ** 2 / expected).sum())
    return chi2_sf(stat, df), stat, df, counts
