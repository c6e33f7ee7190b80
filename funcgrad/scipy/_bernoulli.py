"""The Bernoulli numbers, exact, for the series that need them (Euler-Maclaurin in zeta, Stirling's in
loggamma) and special.bernoulli."""
from __future__ import annotations

import functools
import math
from fractions import Fraction


@functools.cache
def bernoulli_numbers(n: int) -> tuple:
    """B_0 .. B_n as Fractions (B_1 = -1/2): B_m = -1 / (m + 1) sum_{k < m} C(m + 1, k) B_k."""
    numbers = [Fraction(1)]
    for m in range(1, n + 1):
        numbers.append(-sum(math.comb(m + 1, k) * numbers[k] for k in range(m)) / (m + 1))
    return tuple(numbers)
