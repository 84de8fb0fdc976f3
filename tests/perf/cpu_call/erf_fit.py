"""The coefficients of csrc/cpu_lanes.h's erf of float lanes, fitted here (needs numpy):

    python tests/perf/cpu_call/erf_fit.py      # prints the C++ table and the fit's error

The vectors compute erf(x) from a = min(|x|, 4) (erf rounds to 1 in float from 3.92 on):
s = 2a, interval k = min(floor(s), 7), v = s - k - 1/2 in [-1/2, 1/2], and

    erf(a) = a * p_k(v) + b_k,   p_k a polynomial of degree 6,

with b_k = 0 below a = 1.5 (p_k fits erf(a)/a, for erf's relative accuracy near 0) and b_k = 1
from there (p_k fits -erfc(a)/a, so that 1 - erfc keeps the digits of erfc). Each polynomial
minimizes the largest error of a * p_k + b_k relative to erf (Lawson's iteration on a weighted
least-squares fit); its coefficients are rounded to float one at a time, lowest first, each
rounding compensated by refitting the higher ones.
"""

import math

import numpy as np

INTERVALS, DEGREE, FIRST_ERFC_INTERVAL = 8, 6, 3
erf, erfc = np.vectorize(math.erf), np.vectorize(math.erfc)


def minimax_rounded(powers: np.ndarray, target: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Coefficients c (floats) that make max |powers @ c - target| / scale small."""
    fixed: list[float] = []
    for _ in range(powers.shape[1]):
        rest = powers[:, len(fixed):]
        left = target - (powers[:, :len(fixed)] @ np.array(fixed) if fixed else 0)
        weights = np.full(len(target), 1 / len(target))
        for _ in range(100):
            root = np.sqrt(weights)
            c, *_ = np.linalg.lstsq(rest / scale[:, None] * root[:, None], left / scale * root, rcond=None)
            error = np.abs(rest @ c - left) / scale
            weights = weights * (error + 1e-300)
            weights /= weights.sum()
        fixed.append(float(np.float32(c[0])))
    return np.array(fixed)


def fit() -> tuple[np.ndarray, float]:
    table, worst = [], 0.0
    for k in range(INTERVALS):
        v = np.linspace(-0.5, 0.5, 8001)
        a = np.maximum((v + k + 0.5) / 2, 1e-12)
        powers = np.vander(v, DEGREE + 1, increasing=True)
        if k < FIRST_ERFC_INTERVAL:
            c = minimax_rounded(powers, erf(a) / a, erf(a) / a)
            error = np.abs(a * (powers @ c) - erf(a))
        else:
            c = minimax_rounded(powers, -erfc(a) / a, 1 / a)
            error = np.abs(1 + a * (powers @ c) - erf(a))
        worst = max(worst, float((error / erf(a)).max()))
        table.append(c)
    return np.array(table), worst


def as_float(value: float) -> str:
    return np.format_float_scientific(np.float32(value), unique=True, precision=9) + "f"


if __name__ == "__main__":
    table, worst = fit()
    print(f"// largest error of the polynomials relative to erf: {worst / 2**-24:.2f} x 2^-24")
    for power in range(DEGREE + 1):
        print("    {" + ", ".join(as_float(table[k][power]) for k in range(INTERVALS)) + "},")
    b = [0.0 if k < FIRST_ERFC_INTERVAL else 1.0 for k in range(INTERVALS)]
    print("    {" + ", ".join(f"{x:.0f}" for x in b) + "},  // b")
