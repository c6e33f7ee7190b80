"""Optimisers as pure gradient transformations (optax's interface, PyTorch's algorithms).

    opt = optim.adamw(learning_rate=optim.cosine_schedule(1e-3, decay_steps=1000), weight_decay=1e-2)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    params = optim.apply_updates(params, updates)

An optimiser is two pure functions; its state is a pytree of arrays, so it checkpoints like the
model. Every algorithm follows the update rule in PyTorch's documentation step for step.
Learning rates are floats or schedules (functions of the step count, starting at 0).

_base.py the interface and chain, _transforms.py the update rules as building blocks,
_optimizers.py PyTorch's optimisers by name, _wrappers.py accumulation, skipping, masks and
parameter groups, _schedules.py the learning-rate schedules, _plateau.py reduce_on_plateau,
_whole_step.py the optimisers whose rule holds the learning rate (ASGD, Adafactor, Muon),
_lbfgs.py L-BFGS, whose step evaluates the function itself; optax's own: _optax_rules.py its update
rules that PyTorch lacks, _optax_optimizers.py its optimisers by name, _edits.py the edits of the
updates (zeroing, clipping per unit, noise), _hyperparams.py inject_hyperparams; losses.py optax.losses
(per-example, optax's signatures; also at this module's top level, as optax's).
"""

from ._base import (  # noqa: F401
    GradientTransformation, GradientTransformationExtraArgs, ScalarOrSchedule, Schedule, apply_updates, chain,
    named_chain, over_shards, sharded, stateless, stateless_with_tree_map)
from ._transforms import (  # noqa: F401
    AdadeltaState, AdagradState, AdamState, AdamaxState, CountState, LionState, NadamState, RMSState,
    RpropState, TraceState, add_decayed_weights, clip, clip_by_global_norm, global_norm, scale,
    scale_by_adadelta, scale_by_adagrad, scale_by_adam, scale_by_adamax, scale_by_learning_rate,
    scale_by_lion, scale_by_nadam, scale_by_radam, scale_by_rms, scale_by_rprop, trace)
from ._optimizers import (  # noqa: F401
    adadelta, adagrad, adam, adamax, adamw, lion, nadam, radam, rmsprop, rprop, sgd)
from ._wrappers import (  # noqa: F401
    ApplyEveryState, EmaState, FiniteState, LookaheadParams, LookaheadState, MaskedState, MultiSteps, MultiStepsState,
    MultiTransformState, apply_every, apply_if_finite, ema, flatten, freeze, lookahead, masked, multi_steps,
    multi_transform, partition)
from ._edits import (  # noqa: F401
    AddNoiseState, ZeroNansState, adaptive_grad_clip, add_noise, centralize, clip_by_block_rms, identity,
    keep_params_nonnegative, set_to_zero, zero_nans)
from ._optax_rules import (  # noqa: F401
    AdanState, AmsgradState, OptimisticState, RssState, SM3State, StdDevState, scale_by_adan, scale_by_amsgrad,
    scale_by_belief, scale_by_novograd, scale_by_optimistic_gradient, scale_by_param_block_norm,
    scale_by_param_block_rms, scale_by_polyak, scale_by_rss, scale_by_schedule, scale_by_sign, scale_by_sm3,
    scale_by_stddev, scale_by_trust_ratio, scale_by_yogi)
from ._optax_optimizers import (  # noqa: F401
    adabelief, adamaxw, adan, amsgrad, fromage, lamb, lars, nadamw, noisy_sgd, novograd, optimistic_gradient_descent,
    polyak_sgd, sign_sgd, sm3, yogi)
from ._hyperparams import InjectHyperparamsState, inject_hyperparams  # noqa: F401
from ._plateau import ReduceLROnPlateauState, reduce_on_plateau  # noqa: F401
from ._lbfgs import LBFGS, LBFGSState, lbfgs  # noqa: F401
from . import losses  # noqa: F401
from .losses import *  # noqa: F401,F403  (optax's losses at its top level too)
from ._whole_step import (  # noqa: F401
    AdafactorState, ASGDState, MuonState, adafactor, asgd, muon, orthogonalize)
from ._schedules import (  # noqa: F401
    constant_schedule, cosine_decay_schedule, cosine_onecycle_schedule, cosine_restarts_schedule, cosine_schedule,
    cyclic_schedule, exponential_decay, exponential_schedule, join_schedules, linear_onecycle_schedule,
    linear_schedule, onecycle_schedule, piecewise_constant_schedule, polynomial_schedule, sgdr_schedule,
    step_schedule, warmup_constant_schedule, warmup_cosine_decay_schedule, warmup_cosine_schedule,
    warmup_exponential_decay_schedule, piecewise_interpolate_schedule)
