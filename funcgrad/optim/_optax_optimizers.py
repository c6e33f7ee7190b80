"""optax's optimisers that PyTorch lacks, by optax's names and arguments, each the chain optax
builds: Yogi, AdaBelief, AMSGrad, NovoGrad, Adan, SM3, LAMB, LARS, Fromage, AdamaxW, NAdamW,
noisy / sign / Polyak SGD and optimistic gradient descent."""
from __future__ import annotations

from ._base import GradientTransformation, ScalarOrSchedule, chain
from ._edits import add_noise
from ._optax_rules import (scale_by_adan, scale_by_amsgrad, scale_by_belief, scale_by_novograd,
                           scale_by_optimistic_gradient, scale_by_polyak, scale_by_sign, scale_by_sm3,
                           scale_by_trust_ratio, scale_by_yogi)
from ._transforms import add_decayed_weights, scale, scale_by_adam, scale_by_adamax, scale_by_learning_rate, trace
from ._wrappers import masked


def yogi(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-3
         ) -> GradientTransformation:
    return chain(scale_by_yogi(b1, b2, eps), scale_by_learning_rate(learning_rate))


def adabelief(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-16,
              eps_root: float = 1e-16, *, nesterov: bool = False) -> GradientTransformation:
    return chain(scale_by_belief(b1, b2, eps, eps_root, nesterov=nesterov), scale_by_learning_rate(learning_rate))


def amsgrad(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
            eps_root: float = 0.0, bias_correction_mu: bool = True, bias_correction_nu: bool = True
            ) -> GradientTransformation:
    """optax's AMSGrad (the maximum of the bias-corrected second moment); PyTorch's is
    adam(amsgrad=True)."""
    return chain(scale_by_amsgrad(b1, b2, eps, eps_root, bias_correction_mu, bias_correction_nu),
                 scale_by_learning_rate(learning_rate))


def novograd(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.25, eps: float = 1e-6,
             eps_root: float = 0.0, weight_decay: float = 0.0) -> GradientTransformation:
    return chain(scale_by_novograd(b1, b2, eps, eps_root, weight_decay), scale_by_learning_rate(learning_rate))


def adan(learning_rate: ScalarOrSchedule, b1: float = 0.98, b2: float = 0.92, b3: float = 0.99, eps: float = 1e-8,
         eps_root: float = 1e-8, weight_decay: ScalarOrSchedule = 0.0, mask=None) -> GradientTransformation:
    return chain(scale_by_adan(b1, b2, b3, eps, eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def sm3(learning_rate: float, momentum: float = 0.9) -> GradientTransformation:
    return chain(scale_by_sm3(momentum), scale(-learning_rate))


def lamb(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6, eps_root: float = 0.0,
         weight_decay: ScalarOrSchedule = 0.0, mask=None) -> GradientTransformation:
    """LAMB (You et al. 2019): Adam's step plus decoupled decay, scaled per parameter by |p| / |step|."""
    return chain(scale_by_adam(b1, b2, eps, eps_root=eps_root), add_decayed_weights(weight_decay, mask),
                 scale_by_trust_ratio(), scale_by_learning_rate(learning_rate))


def lars(learning_rate: ScalarOrSchedule, weight_decay: ScalarOrSchedule = 0.0, weight_decay_mask=True,
         trust_coefficient: float = 0.001, eps: float = 0.0, trust_ratio_mask=True, momentum: float = 0.9,
         nesterov: bool = False) -> GradientTransformation:
    """LARS (You et al. 2017): the gradient plus weight decay, scaled per parameter by
    trust_coefficient |p| / |g|, then the learning rate and momentum (optax's order: the momentum
    buffer holds scaled steps)."""
    return chain(add_decayed_weights(weight_decay, weight_decay_mask),
                 masked(scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps), trust_ratio_mask),
                 scale_by_learning_rate(learning_rate), trace(momentum, 0.0, nesterov))


def fromage(learning_rate: ScalarOrSchedule, min_norm: float = 1e-6) -> GradientTransformation:
    """Fromage (Bernstein et al. 2020): steps of relative size learning_rate, then the parameters
    shrunk by 1 / sqrt(1 + learning_rate^2)."""
    if callable(learning_rate):
        def shrink(count):
            return 1 / (1 + learning_rate(count) ** 2) ** 0.5
        return chain(scale_by_trust_ratio(min_norm), scale_by_learning_rate(lambda c: shrink(c) * learning_rate(c)),
                     add_decayed_weights(lambda c: shrink(c) - 1))
    shrink = 1 / (1 + learning_rate ** 2) ** 0.5
    # a negative decay (the shrinkage), which add_decayed_weights refuses as a number, as a schedule
    return chain(scale_by_trust_ratio(min_norm), scale_by_learning_rate(learning_rate * shrink),
                 add_decayed_weights(lambda count: shrink - 1))


def adamaxw(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
            weight_decay: ScalarOrSchedule = 1e-4, mask=None) -> GradientTransformation:
    """Adamax with decoupled weight decay (optax's)."""
    return chain(scale_by_adamax(b1, b2, eps), add_decayed_weights(weight_decay, mask),
                 scale_by_learning_rate(learning_rate))


def nadamw(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
           eps_root: float = 0.0, weight_decay: ScalarOrSchedule = 1e-4, mask=None, *,
           nesterov: bool = True) -> GradientTransformation:
    """optax's NAdamW: AdamW with Nesterov's look-ahead momentum (Dozat 2016); PyTorch's NAdam, with its
    momentum schedule, is nadam()."""
    return chain(scale_by_adam(b1, b2, eps, eps_root=eps_root, nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask), scale_by_learning_rate(learning_rate))


def noisy_sgd(learning_rate: ScalarOrSchedule, eta: float = 0.01, gamma: float = 0.55, key=None, *,
              seed: int | None = None) -> GradientTransformation:
    return chain(add_noise(eta, gamma, key, seed=seed), scale_by_learning_rate(learning_rate))


def sign_sgd(learning_rate: ScalarOrSchedule) -> GradientTransformation:
    return chain(scale_by_sign(), scale_by_learning_rate(learning_rate))


def polyak_sgd(max_learning_rate: float = 1.0, scaling: ScalarOrSchedule = 1.0, f_min: float = 0.0, eps: float = 0.0,
               variant: str = "sps") -> GradientTransformation:
    """SGD with Polyak's step size: update(grads, state, params, value=loss)."""
    return chain(scale_by_learning_rate(scaling), scale_by_polyak(f_min, max_learning_rate, eps, variant))


def optimistic_gradient_descent(learning_rate: ScalarOrSchedule, alpha: float = 1.0, beta: float = 1.0
                                ) -> GradientTransformation:
    return chain(scale_by_optimistic_gradient(alpha, beta), scale_by_learning_rate(learning_rate))
