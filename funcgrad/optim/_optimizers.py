"""PyTorch's optimisers by name, each a chain of building blocks (torch.optim's arguments, the
update rules step for step)."""
from __future__ import annotations

from ._base import GradientTransformation, ScalarOrSchedule, _at_least, _nonzero, chain
from ._transforms import (add_decayed_weights, scale, scale_by_adadelta, scale_by_adagrad, scale_by_adam,
                          scale_by_adamax, scale_by_learning_rate, scale_by_lion, scale_by_nadam, scale_by_radam,
                          scale_by_rms, scale_by_rprop, trace)

def _torch_optimizer(parts, maximize: bool) -> GradientTransformation:
    """A PyTorch optimiser's transformations, the gradient negated first where it maximises."""
    return chain(scale(-1.0), *parts) if maximize else chain(*parts)


def _weight_decay(step: GradientTransformation, weight_decay: float, decoupled: bool, mask=None) -> list:
    """L2 added to the gradient before the step, or decoupled (AdamW's) after it; mask (optax's)
    names the parameters it applies to."""
    decay = add_decayed_weights(weight_decay, mask)
    return [step, decay] if decoupled else [decay, step]


def sgd(learning_rate: ScalarOrSchedule, momentum: float = 0.0, dampening: float = 0.0, nesterov: bool = False,
        weight_decay: float = 0.0, maximize: bool = False) -> GradientTransformation:
    _at_least(momentum, 0.0, "momentum value")
    parts = [add_decayed_weights(weight_decay)]
    if _nonzero(momentum) or nesterov:  # trace refuses nesterov without momentum, as PyTorch's SGD
        parts.append(trace(momentum, dampening, nesterov))
    return _torch_optimizer([*parts, scale_by_learning_rate(learning_rate)], maximize)


def adam(learning_rate: ScalarOrSchedule = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False,
         decoupled_weight_decay: bool = False, *, eps_root: float = 0.0, nesterov: bool = False,
         mask=None) -> GradientTransformation:
    """torch.optim.Adam; weight_decay is L2 added to the gradient (decoupled_weight_decay: AdamW).
    optax's keywords too: eps_root inside the root, nesterov momentum, mask for the weight decay."""
    step = scale_by_adam(b1, b2, eps, amsgrad, eps_root=eps_root, nesterov=nesterov)
    return _torch_optimizer([*_weight_decay(step, weight_decay, decoupled_weight_decay, mask),
                             scale_by_learning_rate(learning_rate)], maximize)


def adamw(learning_rate: ScalarOrSchedule = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          weight_decay: float = 1e-2, amsgrad: bool = False, maximize: bool = False, *, eps_root: float = 0.0,
          nesterov: bool = False, mask=None) -> GradientTransformation:
    """torch.optim.AdamW: decoupled weight decay, p -= lr * (adam step + weight_decay * p); optax's
    eps_root, nesterov and mask (the parameters the decay applies to) as keywords."""
    return adam(learning_rate, b1, b2, eps, weight_decay, amsgrad, maximize, decoupled_weight_decay=True,
                eps_root=eps_root, nesterov=nesterov, mask=mask)


def rmsprop(learning_rate: ScalarOrSchedule = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
            weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
            maximize: bool = False) -> GradientTransformation:
    return _torch_optimizer([add_decayed_weights(weight_decay), scale_by_rms(alpha, eps, centered, momentum),
                             scale_by_learning_rate(learning_rate)], maximize)


def adagrad(learning_rate: ScalarOrSchedule = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
            initial_accumulator_value: float = 0.0, eps: float = 1e-10,
            maximize: bool = False) -> GradientTransformation:
    step = scale_by_adagrad(lr_decay, eps, initial_accumulator_value)
    return _torch_optimizer([add_decayed_weights(weight_decay), step, scale_by_learning_rate(learning_rate)], maximize)


def adamax(learning_rate: ScalarOrSchedule = 2e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
           weight_decay: float = 0.0, maximize: bool = False) -> GradientTransformation:
    return _torch_optimizer([add_decayed_weights(weight_decay), scale_by_adamax(b1, b2, eps),
                             scale_by_learning_rate(learning_rate)], maximize)


def nadam(learning_rate: ScalarOrSchedule = 2e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          weight_decay: float = 0.0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False,
          maximize: bool = False) -> GradientTransformation:
    step = scale_by_nadam(b1, b2, eps, momentum_decay)
    return _torch_optimizer([*_weight_decay(step, weight_decay, decoupled_weight_decay),
                             scale_by_learning_rate(learning_rate)], maximize)


def radam(learning_rate: ScalarOrSchedule = 1e-3, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          weight_decay: float = 0.0, decoupled_weight_decay: bool = False, maximize: bool = False, *,
          threshold: float = 5.0) -> GradientTransformation:
    """torch.optim.RAdam; optax's threshold (the rho_t above which the rectified step applies)."""
    step = scale_by_radam(b1, b2, eps, threshold=threshold)
    return _torch_optimizer([*_weight_decay(step, weight_decay, decoupled_weight_decay),
                             scale_by_learning_rate(learning_rate)], maximize)


def adadelta(learning_rate: ScalarOrSchedule = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0,
             maximize: bool = False) -> GradientTransformation:
    return _torch_optimizer([add_decayed_weights(weight_decay), scale_by_adadelta(rho, eps),
                             scale_by_learning_rate(learning_rate)], maximize)


def rprop(learning_rate: float = 1e-2, etas: tuple = (0.5, 1.2), step_sizes: tuple = (1e-6, 50.0),
          maximize: bool = False) -> GradientTransformation:
    """torch.optim.Rprop: learning_rate is every entry's first step (a constant: the steps adapt)."""
    _at_least(learning_rate, 0.0, "learning rate")
    return _torch_optimizer([scale_by_rprop(learning_rate, etas, step_sizes), scale(-1.0)], maximize)


def lion(learning_rate: ScalarOrSchedule = 1e-4, b1: float = 0.9, b2: float = 0.99,
         weight_decay: float = 0.0) -> GradientTransformation:
    return chain(scale_by_lion(b1, b2), add_decayed_weights(weight_decay), scale_by_learning_rate(learning_rate))
