"""The exceptions funcgrad raises, each naming what was wrong."""


class FuncgradError(Exception):
    """Base class of funcgrad's own errors."""


class ShapeError(FuncgradError, ValueError):
    """Operand shapes that do not fit together (broadcasting, matmul, reshape...)."""


class AxisError(ShapeError, IndexError):
    """An axis out of an array's range: also an IndexError, as NumPy's AxisError and the Array API
    standard ask."""


class TracerLeakError(FuncgradError, RuntimeError):
    """A traced value escaped the transform that created it and was used afterwards."""


class NonFiniteError(FuncgradError, FloatingPointError):
    """Raised under config.debug_nans by the first primitive that produces a NaN."""


class ConcretizationError(FuncgradError, TypeError):
    """A Python value (bool, int, float) was asked of an array traced abstractly by jit."""


class GradientCutWarning(UserWarning):
    """float(), int() or .item() of a value being differentiated: the number is a constant, so no
    gradient flows through it (fg.stop_gradient says that on purpose, without the warning)."""


class DeviceMismatchError(FuncgradError, RuntimeError):
    """A primitive was given arrays on different devices (funcgrad never moves them implicitly)."""
