"""Keys (split, fold_in), random bits, and the samplers drawn from uniform and normal numbers
(the package's docstring says how keys work)."""
from __future__ import annotations

import builtins
import operator
import math

import ml_dtypes
import numpy as np

from .. import devices, dtypes
from .. import numpy as fnp
from ..array import Array, ArrayBase
from ..numpy import linalg
from ..scipy import special
from ..ops import prng
from ..trace import bind

def _key(key):
    key = fnp.asarray(key)
    if key.shape != (2,) or key.dtype != dtypes.uint32:
        raise TypeError(f"expected a PRNG key (a uint32 array of shape (2,) from fg.random.key), "
                        f"got {key.dtype} of shape {tuple(key.shape)}")
    return key


def _blocks(key, counters) -> Array:
    """Encrypt the counters c (as the 64-bit pairs (0, c), JAX's partitionable Threefry) under key:
    shape (len(counters), 2). counters: an Array, or a count n for 0..n-1 (made on the key's device)."""
    key = _key(key)
    if isinstance(counters, int):
        if counters > 2 ** 32:
            raise ValueError(f"cannot draw {counters} random words from one key (at most 2**32): split the key")
        counters = devices.arange(counters, dtypes.uint32, key.device)
    counters = fnp.asarray(counters, dtype=dtypes.uint32)
    return bind(prng.threefry2x32_p, key, devices.full(counters.shape, 0, dtypes.uint32, key.device), counters)


def key(seed: int) -> Array:
    """A key from an integer seed (jax.random.key / PRNGKey)."""
    try:
        seed = operator.index(seed)  # 1.5 or "3" is an error, not a silently truncated seed
    except TypeError:
        raise TypeError(f"the seed must be an integer, got {type(seed).__name__} {seed!r}") from None
    if not -(2 ** 63) <= seed < 2 ** 64:
        raise ValueError(f"seed {seed} does not fit in 64 bits")
    seed %= 2 ** 64
    return Array(np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32))


PRNGKey = key


def key_data(keys) -> Array:
    """The uint32 words of keys (funcgrad's keys are those words already: jax.random.key_data)."""
    return _key_batch(keys)


def wrap_key_data(key_bits_array, *, impl=None) -> Array:
    """Keys from uint32 words of shape (..., 2) (jax.random.wrap_key_data); impl 'threefry2x32' or None."""
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"wrap_key_data: funcgrad's keys are threefry2x32, not {impl!r}")
    return _key_batch(key_bits_array)


def clone(key) -> Array:
    """key itself: funcgrad's keys are immutable values (jax.random.clone)."""
    return _key_batch(key)


def key_impl(keys) -> str:
    _key_batch(keys)
    return "threefry2x32"


def _key_batch(keys) -> Array:
    keys = fnp.asarray(keys)
    if keys.ndim < 1 or keys.shape[-1] != 2 or keys.dtype != dtypes.uint32:
        raise TypeError(f"expected PRNG keys (uint32 arrays of shape (..., 2) from fg.random.key), got {keys.dtype} "
                        f"of shape {tuple(keys.shape)}")
    return keys


def split(key, num: int | tuple = 2) -> Array:
    """num new independent keys, shape (num, 2); a tuple num gives them that shape, (*num, 2)."""
    shape = _shape(num)
    return fnp.reshape(_blocks(key, math.prod(shape)), shape + (2,))


def fold_in(key, data) -> Array:
    """A new key determined by key and an integer (a step number, a rank); data may be traced."""
    if isinstance(data, ArrayBase):
        counter = fnp.reshape(fnp.astype(data, dtypes.uint32), (1,))  # wraps modulo 2**32
    else:
        counter = devices.full((1,), int(data) & 0xFFFFFFFF, dtypes.uint32, fnp.asarray(key).device)
    return fnp.reshape(_blocks(key, counter), (2,))


def _shape(shape) -> tuple[int, ...]:
    shape = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"a sample shape has no negative dimensions, got {shape}")
    return shape


def random_bits(key, shape=(), dtype=None) -> Array:
    """Uniform random unsigned integers (uint32 by default; uint8, uint16 and uint64 too), JAX's
    exactly: element i encrypts counter i; uint32 is the xor of the two words, narrower types its
    low bits, uint64 the two words."""
    shape = _shape(shape)
    dtype = dtypes.uint32 if dtype is None else dtypes.canonicalize(dtype)
    if dtype not in (dtypes.uint32, dtypes.uint16, dtypes.uint8, dtypes.uint64):
        raise TypeError(f"random bits come as uint8, uint16, uint32 or uint64, not {dtype}")
    blocks = _blocks(key, math.prod(shape))
    high, low = blocks[:, 0], blocks[:, 1]
    if dtype == dtypes.uint64:
        words = (fnp.astype(high, dtypes.uint64) << 32) | fnp.astype(low, dtypes.uint64)
    else:
        words = fnp.astype(high ^ low, dtype)  # narrower: the low bits (a wrapping conversion)
    return fnp.reshape(words, shape)


_ONE_BITS = {dtypes.float16: 0x3C00, dtypes.bfloat16: 0x3F80, dtypes.float32: 0x3F800000,
             dtypes.float64: 0x3FF0000000000000}
_WORDS = {2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}


def _unit_float(key, shape, dtype) -> Array:
    """Uniform in [0, 1) in dtype, as JAX draws it: the top mantissa bits of random words of the
    dtype's width (8 bits widened for bfloat16) under the exponent of 1, minus 1."""
    dtype = dtypes.canonicalize(dtype)
    mantissa_bits = ml_dtypes.finfo(dtype).nmant
    word = _WORDS[dtype.itemsize]
    drawn = dtypes.uint8 if mantissa_bits < 8 else word
    words = fnp.astype(random_bits(key, shape, drawn), word)
    shift = 8 * drawn.itemsize - mantissa_bits
    mantissa = (words >> np.asarray(shift, word)) | np.asarray(_ONE_BITS[dtype], word)
    return bind(prng.bitcast_p, mantissa, dtype=dtype) - np.asarray(1.0, dtype)


def _float_dtype(dtype):
    dtype = dtypes.canonicalize(dtype)
    if not dtypes.is_float(dtype):
        raise TypeError(f"this sampler produces floating-point numbers, not {dtype}")
    return dtype, (dtypes.float64 if dtype == dtypes.float64 else dtypes.float32)


def uniform(key, shape=(), dtype=dtypes.float32, minval=0.0, maxval=1.0) -> Array:
    """Uniform samples in [minval, maxval), computed in dtype as JAX's (the same numbers)."""
    dtype = _float_dtype(dtype)[0]
    u = _unit_float(key, _shape(shape), dtype)
    lo, hi = (v if isinstance(v, ArrayBase) else np.asarray(v, dtype) for v in (minval, maxval))
    return fnp.astype(fnp.maximum(u * (hi - lo) + lo, lo), dtype)


def normal(key, shape=(), dtype=dtypes.float32) -> Array:
    """Standard normal samples, sqrt(2) erfinv(u) for u uniform in (-1, 1), as JAX's."""
    dtype, compute = _float_dtype(dtype)
    lowest = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype))
    u = fnp.astype(uniform(key, shape, dtype, lowest, 1.0), compute)
    return fnp.astype(np.sqrt(2.0).astype(compute) * special.erfinv(u), dtype)


def truncated_normal(key, lower, upper, shape=None, dtype=dtypes.float32) -> Array:
    """Normal samples conditioned on lower < x < upper (inverse CDF through erf); lower and upper
    broadcast to shape (by default their broadcast shape, as JAX's)."""
    dtype, _ = _float_dtype(dtype)
    lower, upper = (np.asarray(v, np.float64) if not isinstance(v, ArrayBase) else fnp.astype(v, dtypes.float64)
                    for v in (lower, upper))
    if not isinstance(lower, ArrayBase) and not isinstance(upper, ArrayBase) and np.any(lower > upper):
        raise ValueError(f"truncated_normal: lower must not exceed upper, got lower={lower}, upper={upper}")
    shape = np.broadcast_shapes(np.shape(lower), np.shape(upper)) if shape is None else _shape(shape)
    lower, upper = (_as_parameter(key, v, dtypes.float64) for v in (lower, upper))
    lo, hi = special.ndtr(lower), special.ndtr(upper)
    p = lo + (hi - lo) * _unit_float(key, shape, dtypes.float64)
    z = np.sqrt(2) * special.erfinv(fnp.clip(2 * p - 1, -1 + 1e-15, 1 - 1e-15))  # finite at the ends
    return fnp.astype(fnp.clip(z, lower, upper), dtype)


def randint(key, shape, minval, maxval, dtype=dtypes.int64) -> Array:
    """Integers uniform in [minval, maxval), JAX's numbers for the same key and dtype: two words of
    the dtype's width per value (32 bits for 8- and 16-bit dtypes, whose bounds clip to their
    range first), (high * 2^bits + low) mod span, so the modulo bias is ~span^2 / 2^(2 bits).
    Bounds may be arrays broadcasting to shape, traced under jit and vmap; they clip to dtype's
    range, and a maxval past its top (256 for uint8) reaches it. An empty range raises where the
    bounds are known (PyTorch's); traced ones give minval there (JAX's)."""
    dtype, shape = dtypes.canonicalize(dtype), _shape(shape)
    if dtype.kind not in "iu":
        raise TypeError(f"randint produces integers, not {dtype}")
    lo, hi = (_integer_bound(key, v) for v in (minval, maxval))
    known = [fnp.concrete_or_none(v) for v in (lo, hi)]
    if all(v is not None for v in known) and np.any(np.broadcast_arrays(*known)[1] <= known[0]):
        raise ValueError(f"randint needs minval < maxval, got minval={minval}, maxval={maxval}")
    info = np.iinfo(dtype)
    if info.bits >= 32:
        return _randint(key, shape, lo, hi, dtype)
    lo, hi = fnp.clip(lo, int(info.min), int(info.max)), fnp.clip(hi, int(info.min), int(info.max) + 1)
    return fnp.astype(_randint(key, shape, lo, hi, np.dtype(np.int32)), dtype)


def _randint(key, shape, lo, hi, dtype) -> Array:
    """JAX's _randint: words of dtype's width, bounds clipped to its range."""
    info, bound = np.iinfo(dtype), np.iinfo(hi.dtype)
    past_top = hi > builtins.min(int(info.max), int(bound.max))
    lo, hi = (fnp.astype(_clip_to(v, info), dtype) for v in (lo, hi))
    unsigned = np.dtype(f"uint{info.bits}")
    high_key, low_key = split(key)
    high, low = random_bits(high_key, shape, unsigned), random_bits(low_key, shape, unsigned)
    one = np.ones((), unsigned)
    span = fnp.where(hi <= lo, one, fnp.astype(hi - lo, unsigned))  # wraps as JAX's: int32 -2^31..2^31-1
    span = fnp.where(past_top & (hi > lo), span + one, span)  # 2^bits wraps to 0: the remainders then keep all
    multiplier = _wrapping_rem(np.asarray(2 ** (info.bits // 2), unsigned), span)  # 2^bits mod span
    multiplier = _wrapping_rem(multiplier * multiplier, span)
    offset = _wrapping_rem(_wrapping_rem(high, span) * multiplier + _wrapping_rem(low, span), span)
    return fnp.broadcast_to(lo + fnp.astype(offset, dtype), shape)


def _integer_bound(key, value) -> Array:
    """A randint bound as an integer array (floats truncate, as JAX's astype(int))."""
    value = _as_parameter(key, value)
    return value if value.dtype.kind in "iu" else fnp.astype(value, dtypes.int64)


def _clip_to(value, info) -> Array:
    """value clipped to the range that both its dtype and info's hold (JAX's convert-and-clip)."""
    own = np.iinfo(value.dtype)
    return fnp.clip(value, builtins.max(int(info.min), int(own.min)), builtins.min(int(info.max), int(own.max)))


def _wrapping_rem(a, span):
    """a mod span for unsigned words, a itself where span is 0 (XLA's remainder by zero, on which
    randint's full 2^bits span relies)."""
    zero = fnp.equal(span, 0)
    return fnp.where(zero, a, fnp.remainder(a, fnp.where(zero, np.ones((), span.dtype), span)))


def bernoulli(key, p=0.5, shape=None) -> Array:
    """Booleans that are True with probability p."""
    p = _as_parameter(key, p, dtypes.float32)
    shape = tuple(p.shape) if shape is None else _shape(shape)
    return _unit_float(key, shape, dtypes.float32) < p


def permutation(key, x, axis: int = 0, independent: bool = False):
    """A random permutation of range(x) for an integer x, else of x's entries along axis;
    independent shuffles each vector along axis on its own. JAX's numbers (its _shuffle)."""
    if np.ndim(x) == 0:
        n = operator.index(fnp.concrete_or_none(x) if isinstance(x, ArrayBase) else x)
        return _shuffle(key, devices.arange(n, dtypes.int64, fnp.asarray(key).device), 0)
    x = _as_parameter(key, x)
    axis = fnp._normalize_axis(axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    return fnp.take(x, _shuffle(key, devices.arange(x.shape[axis], dtypes.int64, x.device), 0), axis=axis)


def _shuffle(key, x, axis: int):
    """x reordered along axis by rounds of a stable sort on fresh 32-bit words (JAX's: 3 ln(size) /
    ln(2^32 - 1) rounds, enough that ties between words leave no measurable bias), each round's key
    split off the last one's."""
    rounds = int(np.ceil(3 * np.log(builtins.max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, subkey = split(key)
        x = fnp.take_along_axis(x, bind(prng.argsort_p, random_bits(subkey, x.shape, dtypes.uint32), axis=axis), axis)
    return x


def gumbel(key, shape=(), dtype=dtypes.float32) -> Array:
    """Standard Gumbel samples, -log(-log(u)) for u uniform in [tiny, 1), as JAX's."""
    dtype, compute = _float_dtype(dtype)
    u = uniform(key, shape, compute, np.finfo(compute).tiny, 1.0)
    return fnp.astype(-fnp.log(-fnp.log(u)), dtype)


def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True) -> Array:
    """Samples of a categorical distribution given unnormalised log-probabilities (Gumbel-max);
    shape = leading sample axes + the logits' batch shape. replace=False draws distinct categories
    (Gumbel top-k over the leading sample axes, as JAX's)."""
    logits = _as_parameter(key, logits)
    axis = axis % logits.ndim
    batch = tuple(logits.shape[:axis] + logits.shape[axis + 1:])
    shape = batch if shape is None else _shape(shape)
    extra = shape[:len(shape) - len(batch)]
    if shape[len(extra):] != batch:
        raise ValueError(f"categorical: shape {shape} must end with the logits' batch shape {batch}")
    compute = dtypes.float64 if logits.dtype == dtypes.float64 else dtypes.float32
    if replace:
        noise = gumbel(key, extra + tuple(logits.shape), compute)
        return fnp.argmax(noise + logits, axis=axis - logits.ndim)
    draws, n = math.prod(extra), logits.shape[axis]
    if draws > n:
        raise ValueError(f"categorical: cannot draw {draws} distinct categories out of {n} without replacement")
    scores = fnp.moveaxis(gumbel(key, tuple(logits.shape), compute) + logits, axis, 0)
    top = bind(prng.argsort_p, -scores, axis=0)[:draws]  # the largest perturbed logits, best first
    return fnp.reshape(top, extra + batch)


bits = random_bits


def exponential(key, shape=(), dtype=dtypes.float32) -> Array:
    """Exponential(1) samples: -log(1 - u)."""
    dtype, compute = _float_dtype(dtype)
    return fnp.astype(-fnp.log1p(-_unit_float(key, _shape(shape), compute)), dtype)


def laplace(key, shape=(), dtype=dtypes.float32) -> Array:
    """Laplace(0, 1) samples by inverting the CDF of u in (-1, 1), as JAX's."""
    dtype, compute = _float_dtype(dtype)
    u = uniform(key, shape, compute, -1.0 + np.finfo(compute).epsneg, 1.0)
    return fnp.astype(fnp.sign(u) * fnp.log1p(-fnp.abs(u)), dtype)


def logistic(key, shape=(), dtype=dtypes.float32) -> Array:
    """Standard logistic samples: log(u / (1 - u)), u uniform in [tiny, 1), as JAX's."""
    dtype, compute = _float_dtype(dtype)
    u = uniform(key, shape, compute, np.finfo(compute).tiny, 1.0)
    return fnp.astype(fnp.log(u) - fnp.log1p(-u), dtype)


def cauchy(key, shape=(), dtype=dtypes.float32) -> Array:
    """Standard Cauchy samples: tan(pi (u - 1/2)), u uniform in [eps, 1), as JAX's."""
    dtype, compute = _float_dtype(dtype)
    u = uniform(key, shape, compute, np.finfo(compute).eps, 1.0)
    return fnp.astype(fnp.tan(np.asarray(np.pi, compute) * (u - 0.5)), dtype)


def lognormal(key, sigma=1.0, shape=None, dtype=dtypes.float32) -> Array:
    sigma = _as_parameter(key, sigma, _float_dtype(dtype)[1])
    shape = tuple(sigma.shape) if shape is None else _shape(shape)
    return fnp.astype(fnp.exp(sigma * normal(key, shape, _float_dtype(dtype)[1])), _float_dtype(dtype)[0])


def _as_parameter(key, value, dtype=None) -> Array:
    """value as an Array (of dtype, if given); a host value (a Python number, a NumPy array) is
    placed on the key's device, so a key on the GPU samples there with host values as parameters."""
    if isinstance(value, ArrayBase):
        return value if dtype is None or value.dtype == dtype else fnp.astype(value, dtype)
    return fnp.asarray(value, dtype=dtype, device=fnp.asarray(key).device)


def _parameters(key, shape, dtype, *params):
    """The parameters as Arrays of the compute dtype (_as_parameter), and the sample shape: shape,
    or by default their broadcast shape (JAX's rule); a shape they do not broadcast to raises."""
    compute = _float_dtype(dtype)[1]
    arrays = [_as_parameter(key, p, compute) for p in params]
    joint = np.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    shape = joint if shape is None else _shape(shape)
    if len(joint) > len(shape) or any(j not in (1, s) for j, s in zip(joint[::-1], shape[::-1])):
        raise ValueError(f"the parameters' shape {joint} does not broadcast to the sample shape {shape}")
    return arrays, shape, compute


def rayleigh(key, scale=1.0, shape=None, dtype=dtypes.float32) -> Array:
    """Rayleigh samples: scale sqrt(-2 log(1 - u))."""
    (scale,), shape, compute = _parameters(key, shape, dtype, scale)
    return fnp.astype(scale * fnp.sqrt(2.0 * exponential(key, shape, compute)), _float_dtype(dtype)[0])


def maxwell(key, shape=(), dtype=dtypes.float32) -> Array:
    """Maxwell-Boltzmann samples: the norm of three standard normals."""
    dtype, compute = _float_dtype(dtype)
    z = normal(key, _shape(shape) + (3,), compute)
    return fnp.astype(fnp.linalg.vector_norm(z, axis=-1), dtype)


def double_sided_maxwell(key, loc, scale, shape=(), dtype=dtypes.float32) -> Array:
    """loc + scale * (a Maxwell sample with a random sign)."""
    (loc, scale), shape, compute = _parameters(key, shape, dtype, loc, scale)
    k_size, k_sign = split(key)
    signed = maxwell(k_size, shape, compute) * fnp.astype(rademacher(k_sign, shape), compute)
    return fnp.astype(loc + scale * signed, _float_dtype(dtype)[0])


def weibull_min(key, scale, concentration, shape=(), dtype=dtypes.float32) -> Array:
    """Weibull samples by the inverse CDF: scale (-log(1 - u))^(1 / concentration)."""
    (scale, concentration), shape, compute = _parameters(key, shape, dtype, scale, concentration)
    return fnp.astype(scale * exponential(key, shape, compute) ** (1.0 / concentration), _float_dtype(dtype)[0])


def pareto(key, b, shape=None, dtype=dtypes.float32) -> Array:
    """Pareto(b) samples on [1, inf): exp(Exponential(1) / b)."""
    (b,), shape, compute = _parameters(key, shape, dtype, b)
    return fnp.astype(fnp.exp(exponential(key, shape, compute) / b), _float_dtype(dtype)[0])


def geometric(key, p, shape=None, dtype=dtypes.int64) -> Array:
    """The number of Bernoulli(p) trials up to the first success (1, 2, ...): 1 + floor(log u /
    log(1 - p))."""
    (p,), shape, compute = _parameters(key, shape, dtypes.float64, p)
    u = _unit_float(key, shape, compute)
    return fnp.astype(fnp.floor(fnp.log1p(-u) / fnp.log1p(-p)) + 1.0, dtype)


def triangular(key, left, mode, right, shape=None, dtype=dtypes.float32) -> Array:
    """Triangular samples on [left, right] peaking at mode, by the inverse CDF."""
    (left, mode, right), shape, compute = _parameters(key, shape, dtype, left, mode, right)
    u = _unit_float(key, shape, compute)
    width = right - left
    cut = (mode - left) / width
    rising = left + fnp.sqrt(fnp.maximum(u * width * (mode - left), 0.0))
    falling = right - fnp.sqrt(fnp.maximum((1.0 - u) * width * (right - mode), 0.0))
    return fnp.astype(fnp.where(u < cut, rising, falling), _float_dtype(dtype)[0])


def wald(key, mean, shape=None, dtype=dtypes.float32) -> Array:
    """Wald (inverse Gaussian) samples of the given mean and shape parameter 1 (JAX's), by
    Michael, Schucany and Haas's transformation."""
    (mean,), shape, compute = _parameters(key, shape, dtype, mean)
    k_normal, k_pick = split(key)
    y = normal(k_normal, shape, compute) ** 2
    mu_y = mean * y
    x = mean + mean * mu_y / 2 - mean / 2 * fnp.sqrt(4 * mu_y + mu_y * mu_y)
    u = _unit_float(k_pick, shape, compute)
    return fnp.astype(fnp.where(u <= mean / (mean + x), x, mean * mean / x), _float_dtype(dtype)[0])


def poisson(key, lam, shape=None, dtype=dtypes.int64) -> Array:
    """Poisson(lam) counts: for lam < 10 the number of uniform products above exp(-lam) (Knuth, as sums of logs),
    above that Hormann's transformed rejection (PTRS, as NumPy's), drawn in rounds until every
    element is accepted (eagerly; under jit a fixed POISSON_ROUNDS, each accepting > 90%)."""
    (lam,), shape, compute = _parameters(key, shape, dtypes.float64, lam)
    lam = fnp.broadcast_to(lam, shape)
    known = fnp.concrete_or_none(lam)
    if known is not None and (known < 0).any():
        raise ValueError(f"poisson: lam must be non-negative, got {known.min()}")
    k_small, k_large = split(key)
    small = fnp.minimum(lam, 10.0)
    draws = int(np.ceil(10 + 10 + 10 * np.sqrt(10)))  # covers lam < 10 to ~1e-15
    log_products = fnp.cumsum(fnp.log(_unit_float(k_small, (draws,) + shape, compute)), axis=0)  # a scan: O(draws)
    knuth = fnp.sum(fnp.astype(log_products > -small, compute), axis=0)
    large = fnp.maximum(lam, 10.0)
    return fnp.astype(fnp.where(lam < 10, knuth, _poisson_ptrs(k_large, large, shape, compute)), dtype)


POISSON_ROUNDS = 16


def _poisson_ptrs(key, lam, shape, compute):
    """Hormann's PTRS for lam >= 10: candidates round by round, the first accepted kept."""
    slam, loglam = fnp.sqrt(lam), fnp.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    out = fnp.zeros_like(lam)
    done = fnp.zeros_like(lam, dtypes.bool_)
    for round_key in split(key, POISSON_ROUNDS):
        k_u, k_v = split(round_key)
        u = _unit_float(k_u, shape, compute) - 0.5
        v = _unit_float(k_v, shape, compute)
        us = 0.5 - fnp.abs(u)
        k = fnp.floor((2 * a / us + b) * u + lam + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        exact = (k >= 0) & ~((us < 0.013) & (v > us)) & (
            fnp.log(v) + fnp.log(inv_alpha) - fnp.log(a / (us * us) + b) <= -lam + k * loglam - special.gammaln(k + 1))
        accept = (quick | exact) & ~done
        out = fnp.where(accept, k, out)
        done = done | accept
        settled = fnp.concrete_or_none(done)  # None under jit: every round runs
        if settled is not None and settled.all():
            break
    return out


def rademacher(key, shape=(), dtype=dtypes.int64) -> Array:
    """-1 or +1 with equal probability."""
    return fnp.astype(fnp.where(bernoulli(key, 0.5, _shape(shape)), 1, -1), dtype)


def choice(key, a, shape=(), replace: bool = True, p=None, axis: int = 0) -> Array:
    """Samples of range(a) for an int a, else of a's entries along axis (the samples' shape in its
    place); p weights them, and replace=False draws distinct ones. JAX's numbers: randint, the
    first of a permutation, inversion of p's running sum, or Gumbel top-k where weighted."""
    is_count = np.ndim(a) == 0
    if is_count:
        n = operator.index(fnp.concrete_or_none(a) if isinstance(a, ArrayBase) else a)
    else:
        a = _as_parameter(key, a)
        axis = fnp._normalize_axis(axis, a.ndim)
        n = a.shape[axis]
    shape = _shape(shape)
    size = math.prod(shape)
    if n <= 0 and size:
        raise ValueError(f"choice: cannot take {size} samples from an empty population")
    if not replace and size > n:
        raise ValueError(f"choice: cannot take {size} distinct samples from {n} without replacement")
    if p is not None:
        p = _as_parameter(key, p)
        p = p if dtypes.is_inexact(p.dtype) else fnp.astype(p, dtypes.default_float)
        if p.shape != (n,):
            raise ValueError(f"choice: p must have shape ({n},), got {tuple(p.shape)}")
    if p is None and replace:
        idx = randint(key, shape, 0, builtins.max(n, 1))
    elif p is None:
        idx = fnp.reshape(permutation(key, n)[:size], shape)
    elif replace:
        running = fnp.cumsum(p)
        idx = fnp.astype(fnp.searchsorted(running, running[-1] * (1 - uniform(key, shape, p.dtype))), dtypes.int64)
    else:
        scores = gumbel(key, (n,), p.dtype) + fnp.log(p)
        idx = fnp.reshape(bind(prng.argsort_p, -scores, axis=0)[:size], shape)  # top k, ties to the lower index
    return idx if is_count else fnp.take(a, idx, axis=axis)


def multivariate_normal(key, mean, cov, shape=None, dtype=dtypes.float32) -> Array:
    """Samples of N(mean, cov): mean + L z with L the Cholesky factor of cov."""
    dtype, compute = _float_dtype(dtype)
    mean, cov = _as_parameter(key, mean, compute), _as_parameter(key, cov, compute)
    d = mean.shape[-1]
    if cov.shape[-2:] != (d, d):
        raise ValueError(f"multivariate_normal: cov of shape {tuple(cov.shape)} does not match mean of shape "
                         f"{tuple(mean.shape)}")
    batch = np.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    shape = batch if shape is None else _shape(shape)
    z = normal(key, shape + (d,), compute)
    lower = linalg.cholesky(cov)
    return fnp.astype(mean + fnp.squeeze(fnp.matmul(lower, fnp.expand_dims(z, -1)), -1), dtype)


def orthogonal(key, n: int, shape=(), dtype=dtypes.float32, m: int | None = None) -> Array:
    """Haar-distributed (n, m) matrices with orthonormal columns (n >= m) or rows (n < m), square by
    default: Q of the QR of a normal matrix, its columns' signs fixed by R's diagonal
    (jax.random.orthogonal)."""
    dtype, compute = _float_dtype(dtype)
    n = int(n)
    m = n if m is None else int(m)
    z = normal(key, _shape(shape) + (max(n, m), min(n, m)), compute)
    q, r = linalg.qr(z)
    signs = fnp.where(fnp.diagonal(r, 0, -2, -1) >= 0, 1.0, -1.0)
    q = q * fnp.expand_dims(signs, -2)
    return fnp.astype(q if n >= m else fnp.swapaxes(q, -1, -2), dtype)
