"""Modules as pytrees (the equinox idea): a model is an immutable value whose arrays are leaves.

A Module's attributes are set in __init__ (or declared as dataclass fields). Every array it
holds — directly, in a sub-module, or inside lists, tuples and dicts — is a leaf, so
`fg.grad(loss)(model, x, y)` returns a model-shaped tree of gradients and optimisers map over
models like any pytree. Everything else (sizes, activation functions, flags) is static structure.
Arrays that must not be differentiated (an integer buffer) are declared in `static_fields`.
"""
from __future__ import annotations

import dis
import sys
from typing import Any, Iterator

import numpy as np

from ..array import ArrayBase
from ..tree import SourceBuilder, register_pytree_node, tree_flatten


def _is_array(x) -> bool:
    return isinstance(x, (ArrayBase, np.ndarray))


class _Static:
    """A non-array leaf kept in the structure; compares by value when it can, else by identity."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        if not isinstance(other, _Static):
            return NotImplemented
        if self.value is other.value:
            return True
        try:
            return bool(self.value == other.value)
        except Exception:  # noqa: BLE001  (ambiguous comparisons mean "different")
            return False

    def __hash__(self):
        try:
            return hash(self.value)
        except TypeError:
            return id(type(self.value))

    def __repr__(self) -> str:
        return _short(self.value)


_initialising: set[int] = set()  # ids of the modules whose constructor is running


class _ModuleMeta(type):
    """Constructs modules: attributes may be set while __init__ runs, never after (equinox's rule),
    because jit and the optimisers treat a module as a value."""

    def __call__(cls, *args, **kwargs):
        obj = cls.__new__(cls)
        _initialising.add(id(obj))
        try:
            obj.__init__(*args, **kwargs)
        finally:
            _initialising.discard(id(obj))
        return obj


class Module(metaclass=_ModuleMeta):
    """Base class of layers and models. Subclass it, set attributes in __init__, define __call__.
    A module is immutable once constructed: `module.replace(field=value)` makes an updated copy."""

    static_fields: tuple[str, ...] = ()
    unnamed_fields: tuple[str, ...] = ()  # attributes PyTorch's names leave out (Sequential's layers)
    counter_fields: tuple[str, ...] = ()  # float arrays that count (BatchNorm's batches): .to(dtype) keeps them

    def __setattr__(self, name: str, value) -> None:
        if id(self) not in _initialising:
            raise AttributeError(f"{type(self).__name__} is immutable once constructed: set {name!r} in __init__, "
                                 f"or make an updated copy with module.replace({name}=...)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable once constructed: it cannot lose {name!r}")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_pytree_node(cls, _flatten_module, lambda aux, leaves, cls=cls: _unflatten_module(cls, aux, leaves),
                             lambda module, aux: ["." + name for name, _ in module.named_parameters()],
                             _module_matcher,
                             lambda aux, cls=cls: _module_builder(cls, aux))

    # ---- introspection -----------------------------------------------------------------------
    def named_parameters(self, prefix: str = "", *, pytorch_names: bool = False) -> Iterator[tuple[str, Any]]:
        """(dotted name, array) for every parameter, e.g. ('layers.0.weight', Array); with
        pytorch_names as PyTorch names it ('0.weight': a Sequential numbers its layers directly)."""
        for name, value in vars(self).items():
            if name in type(self).static_fields:
                continue
            unnamed = pytorch_names and name in type(self).unnamed_fields
            yield from _named(value, prefix[:-1] if unnamed else f"{prefix}{name}", pytorch_names)

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, "Module"]]:
        """(dotted name, module) for this module ('' or prefix) and every module inside it."""
        yield prefix, self
        for name, value in vars(self).items():
            for i, child in _submodules(value):
                path = f"{prefix}.{name}" if prefix else name
                yield from child.named_modules(f"{path}.{i}" if i is not None else path)

    def modules(self) -> list["Module"]:
        return [m for _, m in self.named_modules()]

    def children(self) -> list["Module"]:
        """The modules held directly by this one (in attributes, or lists/tuples of them)."""
        return [child for value in vars(self).values() for _, child in _submodules(value)]

    def replace(self, **changes) -> "Module":
        """A copy with some attributes replaced (modules are values: update by copying)."""
        unknown = sorted(set(changes) - set(vars(self)))
        if unknown:
            raise AttributeError(f"{type(self).__name__} has no attributes {unknown}; it has {sorted(vars(self))}")
        obj = object.__new__(type(self))
        for name, value in {**vars(self), **changes}.items():
            object.__setattr__(obj, name, value)
        return obj

    def train(self, mode: bool = True) -> "Module":
        """A copy with every layer that has a `training` field (BatchNorm) in training mode, or in
        evaluation mode for mode=False (PyTorch's model.train(), functional: use the result)."""
        _use_the_result("train" if mode else "eval")
        return _with_training(self, bool(mode))

    def eval(self) -> "Module":
        """A copy in evaluation mode (running statistics); `model = model.eval()`."""
        _use_the_result("eval")
        return _with_training(self, False)

    def to(self, *args, device=None, dtype=None) -> "Module":
        """A copy with every array on `device` and/or every floating array in `dtype`, as PyTorch's
        model.to("cuda") / model.to(fnp.float64) (functional: `model = model.to(...)`)."""
        for arg in args:
            if isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda") or hasattr(arg, "platform"):
                device = arg
            else:
                dtype = arg
        changed = _converted(self, device, dtype)
        _use_the_result("to")  # last: a bad device or dtype says so first
        return changed

    def float(self) -> "Module":  # noqa: A003  (PyTorch's names)
        _use_the_result("float")
        return _converted(self, None, "float32")

    def double(self) -> "Module":
        _use_the_result("double")
        return _converted(self, None, "float64")

    def half(self) -> "Module":
        _use_the_result("half")
        return _converted(self, None, "float16")

    def bfloat16(self) -> "Module":
        _use_the_result("bfloat16")
        return _converted(self, None, "bfloat16")

    def parameters(self) -> list:
        return [p for _, p in self.named_parameters()]

    def num_parameters(self) -> int:
        return int(sum(int(np.prod(p.shape, dtype=np.int64)) for p in self.parameters()))

    def state_dict(self) -> dict[str, Any]:
        return dict(self.named_parameters())

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> "Module":
        """A copy of this module with its parameters taken from `state` (checked by name and shape):
        `model = model.load_state_dict(state)`; this module itself stays as it was. A parameter may
        be named as state_dict() names it or as PyTorch does ('0.weight' in a Sequential), so a
        torch state_dict (as NumPy arrays) loads."""
        from .. import numpy as fnp
        own = self.state_dict()
        names = list(own)
        aliases = [name for name, _ in self.named_parameters(pytorch_names=True)]
        keys = [n if n in state else a if a in state else None for n, a in zip(names, aliases)]
        missing = [n for n, k in zip(names, keys) if k is None]
        unexpected = [k for k in state if k not in own and k not in aliases]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for name, k in zip(names, keys):
            if k is not None and tuple(np.shape(state[k])) != tuple(own[name].shape):
                raise ValueError(f"load_state_dict: '{k}' has shape {tuple(np.shape(state[k]))} in the state "
                                 f"but {tuple(own[name].shape)} in the model")
        leaves, treedef = tree_flatten(self)
        if len(names) != len(leaves):
            raise RuntimeError("state_dict names and pytree leaves disagree")  # a bug, not bad input
        new = [leaf if k is None else fnp.asarray(state[k], dtype=leaf.dtype) for k, leaf in zip(keys, leaves)]
        _use_the_result("load_state_dict")  # last: a state that does not fit says so first
        return treedef.unflatten(new)

    def __repr__(self) -> str:
        parts = []
        for name, value in vars(self).items():
            if _is_array(value):
                parts.append(f"{name}={value.dtype}{list(value.shape)}")
            elif isinstance(value, Module):
                parts.append(f"{name}={value!r}")
            elif isinstance(value, (list, tuple)) and any(isinstance(v, Module) for v in value):
                parts.append(f"{name}=[{', '.join(_short(v) for v in value)}]")
            else:
                parts.append(f"{name}={_short(value)}")
        return f"{type(self).__name__}({', '.join(parts)})"


def rebuilt(node, rule):
    """node (a module, or a list, tuple or dict holding modules) with rule applied to every module in
    it, outermost first: where rule returns a value, that replaces the module; elsewhere a module,
    list, tuple or dict is rebuilt from its children. How one model is turned into another
    (tensor-parallel or sharded layers in place of ordinary ones)."""
    if isinstance(node, Module):
        changed = rule(node)
        if changed is not None:
            return changed
        return node.replace(**{name: rebuilt(value, rule) for name, value in vars(node).items()})
    if isinstance(node, (list, tuple)):
        return type(node)(rebuilt(v, rule) for v in node)
    if isinstance(node, dict):
        return {k: rebuilt(v, rule) for k, v in node.items()}
    return node


def _converted(module: "Module", device, dtype) -> "Module":
    """module with its floating arrays cast to dtype (but its counter_fields, which count) and every
    array moved to device (either None: unchanged)."""
    from .. import dtypes
    from ..devices import device_put
    out = module
    if dtype is not None:
        target = dtypes.canonicalize(dtype)
        if not dtypes.is_inexact(target):
            raise TypeError(f"Module.to: parameters convert to a floating dtype, not {target}")
        out = _cast_floats(out, target)
    return out if device is None else device_put(out, device)


def _cast_floats(node, target):
    from .. import dtypes
    from .. import numpy as fnp
    if isinstance(node, Module):
        kept = type(node).counter_fields
        return node.replace(**{name: value if name in kept else _cast_floats(value, target)
                               for name, value in vars(node).items()})
    if isinstance(node, (list, tuple)):
        return type(node)(_cast_floats(v, target) for v in node)
    if isinstance(node, dict):
        return {k: _cast_floats(v, target) for k, v in node.items()}
    if _is_array(node) and dtypes.is_inexact(np.dtype(node.dtype)):
        return fnp.astype(node, target)
    return node


def _use_the_result(method: str) -> None:
    """PyTorch's model.load_state_dict(sd) and model.eval() change the model in place; here they
    return the changed copy, so a call whose result the caller throws away would silently do
    nothing: it raises instead (read from the caller's bytecode: the call's value is popped)."""
    frame = sys._getframe(2)
    after = next((i for i in dis.get_instructions(frame.f_code) if i.offset > frame.f_lasti), None)
    if after is not None and after.opname == "POP_TOP":
        raise TypeError(f"{method}() returns the changed model and leaves this one as it was (modules are immutable "
                        f"values): write `model = model.{method}(...)`")


def _with_training(module: "Module", mode: bool) -> "Module":
    changes = {name: _with_training_in(value, mode) for name, value in vars(module).items()}
    if "training" in changes:
        changes["training"] = mode
    return module.replace(**changes)


def _with_training_in(value, mode: bool):
    if isinstance(value, Module):
        return _with_training(value, mode)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Module) for v in value):
        return type(value)(_with_training_in(v, mode) for v in value)
    return value


def _short(value) -> str:
    if callable(value) and not isinstance(value, Module) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def _submodules(value):
    """(index or None, module) for a module attribute, or the modules in a list/tuple of them."""
    if isinstance(value, Module):
        return [(None, value)]
    if isinstance(value, (list, tuple)):
        return [(i, v) for i, v in enumerate(value) if isinstance(v, Module)]
    return []


def _named(value, name: str, pytorch_names: bool = False):
    """(name, array) for the arrays in value, named under `name` ('' at the top of PyTorch's names)."""
    inner = (lambda part: f"{name}.{part}") if name else str
    if _is_array(value):
        yield name, value
    elif isinstance(value, Module):
        yield from value.named_parameters(prefix=inner(""), pytorch_names=pytorch_names)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _named(v, inner(i), pytorch_names)
    elif isinstance(value, dict):
        for k in sorted(value):
            yield from _named(value[k], inner(k), pytorch_names)


_ARRAY = "array"  # layout marker: the attribute is one array leaf
_SCALARS = (bool, int, float, str)
_EQ_BY_VALUE = frozenset(_SCALARS)


def _flatten_module(module: Module):
    """Children: the array leaves of every attribute; aux: attribute names, their structures and
    the non-array leaves (which stay in the structure)."""
    children, layout = [], []
    statics = type(module).static_fields
    for name, value in vars(module).items():
        if name in statics or isinstance(value, _SCALARS) or value is None:
            layout.append((name, None, _Static(value)))
            continue
        if _is_array(value):  # the common case, without building a tree structure
            children.append(value)
            layout.append((name, _ARRAY, None))
            continue
        leaves, treedef = tree_flatten(value)
        kept = []
        for leaf in leaves:  # one pass: this runs for every module on every jit call
            if _is_array(leaf):
                children.append(leaf)
                kept.append(None)
            else:
                kept.append(_Static(leaf))
        layout.append((name, treedef, tuple(kept)))
    return children, tuple(layout)


def _module_matcher(layout):
    """A function of a module that returns its array leaves if _flatten_module would give it
    `layout`, else None, as generated code (jit checks its arguments with it on every call). It is
    stricter than the layout's equality where that is cheaper: a static equal in value but not in
    type, or an equal array that is not the same object, gives None, and jit then flattens."""
    src = SourceBuilder()
    arrays = src.const((ArrayBase, np.ndarray))

    def same(value: str, old) -> str:
        """Source that is true when value is the static `old` (a scalar may be an equal one)."""
        k = src.const(old)
        return f"({value} is {k} or (type({value}) is {src.const(type(old))} and {value} == {k}))" \
            if type(old) in _EQ_BY_VALUE else f"{value} is {k}"

    names = tuple(name for name, _, _ in layout)
    lines = ["fields = module.__dict__", f"if tuple(fields) != {src.const(names)}: return None"]
    leaves: list[str] = []
    for i, (name, treedef, kept) in enumerate(layout):
        value = f"f{i}"
        lines.append(f"{value} = fields[{name!r}]")
        if treedef is _ARRAY:
            lines.append(f"if not isinstance({value}, {arrays}): return None")
            leaves.append(value)
        elif treedef is None:
            lines.append(f"if not {same(value, kept.value)}: return None")
        else:
            lines.append(f"c{i} = {src.const(treedef.match)}({value})")
            lines.append(f"if c{i} is None: return None")
            for k, static in enumerate(kept):
                leaf = f"c{i}[{k}]"
                if static is None:
                    lines.append(f"if not isinstance({leaf}, {arrays}): return None")
                    leaves.append(leaf)
                else:
                    lines.append(f"if isinstance({leaf}, {arrays}) or not {same(leaf, static.value)}: return None")
    return src.function("match_module", "module", lines + [f"return [{', '.join(leaves)}]"])


def _module_builder(cls, layout):
    """A function of the module's leaves that builds it with `layout`, as generated code (jit
    rebuilds its output modules with it on every call)."""
    src = SourceBuilder()
    src.namespace.update(new=object.__new__, cls=cls)
    lines = ["obj = new(cls)", "fields = obj.__dict__"]  # a constructed module's fields: filled directly
    args: list[str] = []

    def child() -> str:
        args.append(f"c{len(args)}")
        return args[-1]

    for name, treedef, kept in layout:
        if treedef is _ARRAY:
            value = child()
        elif treedef is None:
            value = src.const(kept.value)
        else:
            parts = [child() if k is None else src.const(k.value) for k in kept]
            value = f"{src.const(treedef.builder())}([{', '.join(parts)}])"
        lines.append(f"fields[{name!r}] = {value}")
    return src.function("build_module", ", ".join(args), lines + ["return obj"])


def _unflatten_module(cls, layout, children):
    obj = object.__new__(cls)
    fields = obj.__dict__  # a constructed module's fields: filled directly
    it = iter(children)
    for name, treedef, kept in layout:
        if treedef is _ARRAY:
            fields[name] = next(it)
        elif treedef is None:
            fields[name] = kept.value
        else:
            fields[name] = treedef.unflatten([next(it) if k is None else k.value for k in kept])
    return obj
