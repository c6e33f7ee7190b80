"""Transforms between spaces, as torch.distributions.transforms: _core.py the interface, the
elementwise and simplex maps, composition and reshaping; _structured.py the maps onto correlation
Cholesky factors and positive definite matrices, and the per-slice CatTransform / StackTransform."""
from ._core import (AbsTransform, AffineTransform, ComposeTransform, CumulativeDistributionTransform,  # noqa: F401
                    ExpTransform, IndependentTransform, LowerCholeskyTransform, PowerTransform, ReshapeTransform,
                    SigmoidTransform, SoftmaxTransform, SoftplusTransform, StickBreakingTransform, TanhTransform,
                    Transform, identity_transform, sum_rightmost)
from ._core import __all__ as _core_names
from ._structured import (CatTransform, CorrCholeskyTransform, PositiveDefiniteTransform,  # noqa: F401
                          StackTransform, tril_matrix_to_vec, vec_to_tril_matrix)
from ._structured import __all__ as _structured_names

__all__ = [*_core_names, *_structured_names]
