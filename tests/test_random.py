"""PRNG keys: the Threefry known answers, reproducibility, independence and distributions."""
import numpy as np
import pytest

import funcgrad as fg
from funcgrad import random
from funcgrad.cpu.threefry import threefry2x32

from .helpers import assert_close


def test_threefry_known_answer_vectors():
    # Random123's known-answer tests for Threefry-2x32, 20 rounds.
    def run(key, ctr):
        y0, y1 = threefry2x32(np.array(key, np.uint32), np.array([ctr[0]], np.uint32),
                              np.array([ctr[1]], np.uint32))
        return int(y0[0]), int(y1[0])
    assert run([0, 0], [0, 0]) == (0x6B200159, 0x99BA4EFE)
    assert run([0xFFFFFFFF, 0xFFFFFFFF], [0xFFFFFFFF, 0xFFFFFFFF]) == (0x1CB996FC, 0xBB002BE7)
    assert run([0x13198A2E, 0x03707344], [0x243F6A88, 0x85A308D3]) == (0xC4923A9C, 0x483DF7A0)


def test_the_streams_are_jaxs():
    """Values jax 0.10.2 printed (jax.random with its default partitionable Threefry)."""
    k = fg.random.key(42)
    np.testing.assert_array_equal(fg.random.split(k), [[1832780943, 270669613], [64467757, 2916123636]])
    np.testing.assert_array_equal(fg.random.fold_in(k, 7), [2547012911, 1371500959])
    np.testing.assert_array_equal(fg.random.bits(k, (4,)), [2098992034, 2919706841, 2646866425, 2409546199])
    np.testing.assert_array_equal(fg.random.bits(k, (3,), fg.uint8), [162, 217, 249])
    np.testing.assert_array_equal(fg.random.bits(k, (2,), fg.uint64), [7871734211187709741, 276886910877598708])
    np.testing.assert_array_equal(fg.random.uniform(k, (4,)), np.array(
        [0.48870956897735596, 0.6797971725463867, 0.6162714958190918, 0.5610160827636719], np.float32))
    np.testing.assert_array_equal(np.asarray(fg.random.uniform(k, (3,), fg.bfloat16), np.float64),
                                  [0.6328125, 0.84375, 0.96875])
    np.testing.assert_array_equal(fg.random.uniform(k, (2,), fg.float64), [0.4267275666499091, 0.015010069515314584])
    assert_close(fg.random.normal(k, (4,)), [-0.02830461598932743, 0.4671318531036377, 0.2957029640674591,
                                             0.15354591608047485], rtol=1e-6, atol=1e-7)



def test_randint_is_jaxs_and_takes_traced_bounds():
    """Values jax 0.10.2 printed (jax_enable_x64, so int64 by default as here): two words per value,
    8- and 16-bit dtypes sampled in 32 bits, maxval past the dtype's top reaching it."""
    k = fg.random.key(7)
    np.testing.assert_array_equal(fg.random.randint(k, (6,), 0, 10), [7, 9, 6, 9, 1, 2])
    np.testing.assert_array_equal(fg.random.randint(k, (6,), -2 ** 40, 2 ** 40), [
        940093749445, -156556779587, -5783055998, 201612672195, -973366532925, 329887672874])
    np.testing.assert_array_equal(fg.random.randint(k, (6,), 0, 256, fg.uint8), [31, 102, 124, 237, 222, 102])
    np.testing.assert_array_equal(fg.random.randint(k, (6,), -3, 1000, fg.int16), [197, 597, 670, 569, 102, 693])
    np.testing.assert_array_equal(fg.random.randint(k, (6,), 0, 2 ** 32, fg.uint32),
                                  [2899676959, 3548400998, 1692160380, 1822441453, 900059358, 2247291750])
    bounds = (np.array([0, 10, 20]), np.array([[50], [100]]))
    np.testing.assert_array_equal(fg.random.randint(k, (2, 3), *bounds), [[37, 39, 46], [59, 21, 62]])
    np.testing.assert_array_equal(fg.jit(lambda key, lo, hi: fg.random.randint(key, (2, 3), lo, hi))(k, *bounds),
                                  [[37, 39, 46], [59, 21, 62]])
    per_bound = fg.vmap(lambda hi: fg.random.randint(k, (6,), 0, hi))(np.array([10, 2 ** 40]))
    np.testing.assert_array_equal(per_bound[0], [7, 9, 6, 9, 1, 2])
    assert np.all((np.asarray(per_bound[1]) >= 0) & (np.asarray(per_bound[1]) < 2 ** 40))


def test_permutation_and_choice_are_jaxs():
    """Values jax 0.10.2 printed: rounds of a stable sort on 32-bit words (two rounds past 1625
    entries), inverse-CDF sampling for weighted choice, Gumbel top-k without replacement."""
    k = fg.random.key(7)
    np.testing.assert_array_equal(fg.random.permutation(k, 8), [4, 2, 3, 5, 0, 7, 6, 1])
    np.testing.assert_array_equal(fg.random.permutation(k, 2000)[:6], [1785, 5, 1002, 442, 880, 109])
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(fg.random.permutation(k, x, axis=1), [[2, 3, 0, 1], [6, 7, 4, 5], [10, 11, 8, 9]])
    np.testing.assert_array_equal(fg.random.permutation(k, x, axis=1, independent=True),
                                  [[2, 3, 0, 1], [4, 5, 7, 6], [10, 9, 11, 8]])
    p = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    np.testing.assert_array_equal(fg.random.choice(k, 4, (6,), p=p), [2, 0, 3, 2, 1, 2])
    np.testing.assert_array_equal(fg.random.choice(k, 4, (3,), replace=False, p=p), [1, 3, 0])
    np.testing.assert_array_equal(fg.random.choice(k, 10, (2, 2), replace=False), [[9, 4], [2, 3]])

def test_keys_are_reproducible_and_split_is_independent():
    k = fg.random.key(42)
    assert k.shape == (2,) and k.dtype == fg.uint32
    a, b = fg.random.split(k)
    assert not np.array_equal(a, b)
    assert np.array_equal(fg.random.split(fg.random.key(42)), fg.random.split(k))
    assert fg.random.split(k, 5).shape == (5, 2)
    x1 = fg.random.normal(a, (1000,))
    assert np.array_equal(x1, fg.random.normal(a, (1000,)))
    assert abs(np.corrcoef(np.asarray(x1), np.asarray(fg.random.normal(b, (1000,))))[0, 1]) < 0.1
    assert not np.array_equal(fg.random.fold_in(k, 1), fg.random.fold_in(k, 2))
    assert not np.array_equal(fg.random.fold_in(k, 0), k)


def test_distributions_have_the_right_moments():
    k = fg.random.key(0)
    n = 20000
    u = np.asarray(fg.random.uniform(k, (n,), minval=-1.0, maxval=3.0))
    assert u.dtype == np.float32 and u.min() >= -1 and u.max() < 3
    assert abs(u.mean() - 1.0) < 0.05 and abs(u.var() - 16 / 12) < 0.05
    z = np.asarray(fg.random.normal(k, (n,), dtype=fg.float64))
    assert z.dtype == np.float64 and abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    assert abs(np.mean(np.abs(z) < 1.96) - 0.95) < 0.01
    r = np.asarray(fg.random.randint(k, (n,), 3, 7))
    assert r.dtype == np.int64 and set(np.unique(r)) == {3, 4, 5, 6}
    assert np.all(np.abs(np.bincount(r - 3) / n - 0.25) < 0.02)
    b = np.asarray(fg.random.bernoulli(k, 0.3, (n,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.02
    t = np.asarray(fg.random.truncated_normal(k, -1.0, 2.0, (n,)))
    assert t.min() >= -1 and t.max() <= 2 and abs(t.mean() - 0.2288) < 0.03
    c = np.asarray(fg.random.categorical(k, np.log(np.array([0.2, 0.3, 0.5])), shape=(n,)))
    assert np.all(np.abs(np.bincount(c, minlength=3) / n - [0.2, 0.3, 0.5]) < 0.02)


def test_permutation():
    k = fg.random.key(3)
    p = np.asarray(fg.random.permutation(k, 10))
    assert sorted(p.tolist()) == list(range(10)) and not np.array_equal(p, np.arange(10))
    x = np.arange(12.0).reshape(6, 2)
    shuffled = np.asarray(fg.random.permutation(k, x))
    assert sorted(shuffled[:, 0].tolist()) == x[:, 0].tolist()
    assert np.array_equal(shuffled[:, 1] - shuffled[:, 0], np.ones(6))


def test_low_precision_and_shapes():
    k = fg.random.key(1)
    assert fg.random.normal(k, (2, 3), dtype=fg.bfloat16).dtype == fg.bfloat16
    assert fg.random.uniform(k, ()).shape == ()
    assert fg.random.normal(k, (0, 3)).shape == (0, 3)


def test_bad_keys_and_arguments():
    with pytest.raises(TypeError, match="PRNG key"):
        fg.random.normal(np.array([1, 2]), (3,))
    with pytest.raises(ValueError, match="minval < maxval"):
        fg.random.randint(fg.random.key(0), (3,), 5, 5)
    with pytest.raises(ValueError, match=r"no negative dimensions, got \(-1, 2\)"):
        fg.random.normal(fg.random.key(0), (-1, 2))  # it gave a (0, 2) sample
    with pytest.raises(TypeError):
        fg.random.uniform(fg.random.key(0), (2.5,))  # it gave 2 samples
    with pytest.raises(TypeError, match="floating-point"):
        fg.random.normal(fg.random.key(0), (3,), dtype=fg.int32)


@pytest.mark.parametrize("name,mean,var", [("exponential", 1.0, 1.0), ("laplace", 0.0, 2.0),
                                           ("logistic", 0.0, np.pi ** 2 / 3), ("rademacher", 0.0, 1.0)])
def test_more_distributions_have_their_moments(name, mean, var):
    s = np.asarray(getattr(fg.random, name)(fg.random.key(3), (100_000,))).astype(np.float64)
    assert abs(s.mean() - mean) < 0.03 and abs(s.var() / var - 1) < 0.05


def test_cauchy_lognormal_choice_and_multivariate_normal():
    key = fg.random.key(4)
    c = np.asarray(fg.random.cauchy(key, (100_000,)))
    assert abs(np.median(c)) < 0.02 and abs(np.subtract(*np.percentile(c, [75, 25])) - 2) < 0.05
    assert abs(np.asarray(fg.random.lognormal(key, 0.5, (100_000,))).mean() / np.exp(0.125) - 1) < 0.01
    draws = np.asarray(fg.random.choice(key, 3, (100_000,), p=np.array([0.2, 0.3, 0.5])))
    assert np.allclose(np.bincount(draws) / draws.size, [0.2, 0.3, 0.5], atol=0.01)
    distinct = np.asarray(fg.random.choice(key, 6, (6,), replace=False))
    assert sorted(distinct.tolist()) == list(range(6))
    assert np.asarray(fg.random.choice(key, np.arange(10.0), (4,), p=np.eye(10)[7])).tolist() == [7.0] * 4
    assert fg.jit(lambda k: fg.random.choice(k, 6, (3,), replace=False))(key).tolist() == \
        np.asarray(fg.random.choice(key, 6, (3,), replace=False)).tolist()
    with pytest.raises(ValueError, match="cannot take 7 distinct samples from 6"):
        fg.random.choice(key, 6, (7,), replace=False)
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    s = np.asarray(fg.random.multivariate_normal(key, np.array([1.0, -1.0]), cov, (100_000,), dtype=fg.float64))
    assert np.allclose(s.mean(0), [1, -1], atol=0.02) and np.allclose(np.cov(s.T), cov, atol=0.03)


def test_jax_signatures_split_shapes_bits_dtypes_and_truncated_normal_broadcasting():
    k = random.key(0)
    assert random.split(k, (2, 3)).shape == (2, 3, 2) and random.split(k, 4).shape == (4, 2)
    assert np.array_equal(random.split(k, (2, 2)).reshape(4, 2), random.split(k, 4))
    assert random.bits(k, (5,), dtype=np.uint8).dtype == np.uint8 and random.bits(k, (2,), np.uint64).dtype == np.uint64
    words = np.asarray(random.bits(k, (6,)))
    assert np.array_equal(np.asarray(random.bits(k, (6,), np.uint16)), words.astype(np.uint16))  # the low bits
    with pytest.raises(TypeError, match="uint8, uint16, uint32 or uint64"):
        random.bits(k, (2,), dtype=np.int32)
    lower, upper = np.array([-1.0, 0.5]), np.array([[1.0], [2.0]])
    t = np.asarray(random.truncated_normal(k, lower, upper, (4000, 2, 2)))
    assert random.truncated_normal(k, lower, upper).shape == (2, 2)  # the bounds' broadcast shape
    assert (t >= np.broadcast_to(lower, (2, 2))).all() and (t <= np.broadcast_to(upper, (2, 2))).all()
    assert abs(t[:, 1, 1].mean() - 1.0430) < 0.02  # E[Z | 0.5 < Z < 2]: (phi(.5) - phi(2)) / (Phi(2) - Phi(.5))
    with pytest.raises(ValueError, match="lower must not exceed upper"):
        random.truncated_normal(k, lower, np.array([0.0, 0.0]))


def test_permutation_independent_categorical_without_replacement_and_rectangular_orthogonal():
    k = random.key(1)
    x = np.arange(12).reshape(3, 4)
    rows = np.asarray(random.permutation(k, x, 1, independent=True))
    assert np.array_equal(np.sort(rows, 1), x)  # each row a permutation of itself
    agree = sum((np.asarray(random.permutation(random.key(i), x, 1, independent=True))[0] % 4
                 == np.asarray(random.permutation(random.key(i), x, 1, independent=True))[1] % 4).all()
                for i in range(200))
    assert agree < 30  # independent rows: alike with probability 1/24, not always
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]]))
    draws = np.asarray(random.categorical(k, logits, shape=(4, 2), replace=False))
    assert draws.shape == (4, 2) and all(sorted(col) == [0, 1, 2, 3] for col in draws.T)
    first = np.bincount([int(np.asarray(random.categorical(random.fold_in(k, i), logits[0], shape=(2,),
                                                           replace=False))[0]) for i in range(2000)], minlength=4)
    assert np.abs(first / 2000 - [0.1, 0.2, 0.3, 0.4]).max() < 0.04  # the first draw is an ordinary sample
    with pytest.raises(ValueError, match="cannot draw 5 distinct categories out of 4"):
        random.categorical(k, logits[0], shape=(5,), replace=False)
    wide, tall = np.asarray(random.orthogonal(k, 3, m=5)), np.asarray(random.orthogonal(k, 5, m=3))
    assert wide.shape == (3, 5) and np.allclose(wide @ wide.T, np.eye(3), atol=1e-5)
    assert tall.shape == (5, 3) and np.allclose(tall.T @ tall, np.eye(3), atol=1e-5)


def test_more_distributions_match_their_cdfs_and_moments():
    """Each sampler against its distribution's CDF at a few quantiles (formulas written out) and
    its mean; gradients flow through the parameters (reparameterised samples)."""
    k, n = random.key(3), 100_000

    def cdf_close(x, cdf, points):
        x = np.asarray(x, np.float64)
        for q in points:
            assert abs((x <= q).mean() - cdf(q)) < 0.006, q

    cdf_close(random.rayleigh(k, 2.0, (n,)), lambda q: 1 - np.exp(-q * q / 8), [1.0, 2.5, 4.0])
    cdf_close(random.weibull_min(k, 2.0, 1.5, (n,)), lambda q: 1 - np.exp(-(q / 2) ** 1.5), [0.5, 2.0, 4.0])
    cdf_close(random.pareto(k, 3.0, (n,)), lambda q: 1 - q ** -3.0, [1.1, 1.5, 3.0])
    cdf_close(random.triangular(k, -1.0, 0.5, 2.0, (n,)),
              lambda q: (q + 1) ** 2 / 4.5 if q < 0.5 else 1 - (2 - q) ** 2 / 4.5, [-0.5, 0.5, 1.5])
    maxwell = np.asarray(random.maxwell(k, (n,)))
    assert abs(maxwell.mean() - 2 * np.sqrt(2 / np.pi)) < 0.01 and abs((maxwell ** 2).mean() - 3) < 0.03
    sided = np.asarray(random.double_sided_maxwell(k, 1.0, 2.0, (n,)))
    assert abs(sided.mean() - 1.0) < 0.03 and abs(((sided - 1) ** 2).mean() - 12) < 0.15
    wald = np.asarray(random.wald(k, 1.5, (n,)))
    assert abs(wald.mean() - 1.5) < 0.02 and abs(wald.var() - 1.5 ** 3) < 0.15  # inverse Gaussian, shape 1
    geometric = np.asarray(random.geometric(k, 0.3, (n,)))
    assert geometric.dtype == np.int64 and geometric.min() == 1 and abs((geometric == 1).mean() - 0.3) < 0.005
    for lam in (0.5, 4.0, 30.0, 1000.0):  # Knuth below 10, PTRS above
        counts = np.asarray(random.poisson(k, lam, (n,)))
        assert counts.dtype == np.int64 and abs(counts.mean() - lam) < 4 * np.sqrt(lam / n) + 1e-9
        assert abs(counts.var() / lam - 1) < 0.03
    jitted = fg.jit(lambda key: random.poisson(key, np.array([3.0, 50.0]), (4, 2)))(k)
    assert np.array_equal(np.asarray(jitted), np.asarray(random.poisson(k, np.array([3.0, 50.0]), (4, 2))))
    assert random.rayleigh(k, np.ones((2, 3))).shape == (2, 3)  # the parameters' shape by default
    with pytest.raises(ValueError, match="does not broadcast"):
        random.pareto(k, np.ones(3), (2,))
    grad = fg.grad(lambda s: random.rayleigh(k, s, (n,), dtype=fg.float64).mean())(2.0)
    assert abs(float(grad) - np.sqrt(np.pi / 2)) < 0.01  # d/ds E[s R] = E[R]


# every sampler given host parameters (Python numbers, NumPy arrays) and a key on the device
ON_DEVICE = {
    "poisson": lambda k: random.poisson(k, np.array([3.0, 30.0]), (2,)),
    "gamma": lambda k: random.gamma(k, np.array([0.4, 3.0])),
    "beta": lambda k: random.beta(k, 2.0, 3.0, (3,)),
    "dirichlet": lambda k: random.dirichlet(k, np.array([1.0, 2.0])),
    "binomial": lambda k: random.binomial(k, np.array([20.0, 100.0]), 0.3),
    "multinomial": lambda k: random.multinomial(k, 5.0, np.array([0.2, 0.8])),
    "t": lambda k: random.t(k, 3.0, (2,)),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, np.array([2.0, 0.5])),
    "lognormal": lambda k: random.lognormal(k, np.array([0.5, 1.0])),
    "categorical": lambda k: random.categorical(k, np.log(np.array([0.2, 0.3, 0.5])), shape=(4,)),
    "categorical_distinct": lambda k: random.categorical(k, np.zeros(3), shape=(2,), replace=False),
    "choice": lambda k: random.choice(k, np.arange(5.0), (3,), p=np.full(5, 0.2)),
    "permutation": lambda k: random.permutation(k, np.arange(6.0).reshape(2, 3), axis=1, independent=True),
    "multivariate_normal": lambda k: random.multivariate_normal(k, np.zeros(2), np.array([[2.0, 0.5], [0.5, 1.0]])),
}


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device or simulator")
@pytest.mark.parametrize("name", ON_DEVICE)
def test_a_key_on_the_device_samples_there_with_host_parameters(name):
    key = random.key(7)
    cpu, gpu = ON_DEVICE[name](key), ON_DEVICE[name](fg.device_put(key, "cuda"))
    assert gpu.device == "cuda:0" and gpu.dtype == cpu.dtype
    np.testing.assert_allclose(np.asarray(gpu.numpy(), np.float64), np.asarray(cpu.numpy(), np.float64), rtol=1e-5)
