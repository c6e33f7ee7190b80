"""Pytrees' core: the node registry, PyTreeDef, flattening and the tree functions built on them
(funcgrad/tree/__init__.py says what a pytree is)."""
from __future__ import annotations

import builtins
import collections
import dataclasses
import functools
import itertools
import threading
from typing import Any, Callable, Hashable, Iterable, NamedTuple, Sequence


def _key_entry(name: str, field: str, text: Callable[[Any], str], doc: str) -> type:
    """A path entry type of JAX's (DictKey, ...): a str whose text is what keystr joins ("['a']",
    "[0]", ".x"), so string code sees what it always saw, with the key itself as an attribute."""
    def __new__(cls, value):
        entry = str.__new__(cls, text(value))
        setattr(entry, field, value)
        return entry

    def __getnewargs__(self):  # pickle and copy rebuild it from its key, not its text
        return (getattr(self, field),)
    return type(name, (str,), {"__new__": __new__, "__getnewargs__": __getnewargs__, "__doc__": doc,
                               "__module__": __name__})


DictKey = _key_entry("DictKey", "key", lambda k: f"[{k!r}]", "A dict entry: .key (jax.tree_util.DictKey).")
SequenceKey = _key_entry("SequenceKey", "idx", lambda i: f"[{i}]",
                         "A list or tuple position: .idx (jax.tree_util.SequenceKey).")
GetAttrKey = _key_entry("GetAttrKey", "name", lambda n: f".{n}",
                        "A namedtuple's or dataclass's field: .name (jax.tree_util.GetAttrKey).")
FlattenedIndexKey = _key_entry("FlattenedIndexKey", "key", lambda i: f"[{i}]",
                               "The i-th child of a node registered without names: .key "
                               "(jax.tree_util.FlattenedIndexKey).")


class _NodeType(NamedTuple):
    flatten: Callable[[Any], tuple[Iterable[Any], Hashable]]
    unflatten: Callable[[Hashable, list[Any]], Any]
    keys: Callable[[Any, Hashable], list[str]]
    match_for: Callable[[Hashable], Callable[[Any], list[Any] | None]] | None = None
    unflatten_for: Callable[[Hashable], Callable[..., Any]] | None = None


_registry: dict[type, _NodeType] = {}


def register_pytree_node(nodetype: type, flatten: Callable, unflatten: Callable,
                         keys: Callable | None = None, match_for: Callable | None = None,
                         unflatten_for: Callable | None = None) -> None:
    """Make `nodetype` a pytree node: flatten(x) -> (children, aux); unflatten(aux, children) -> x.

    `keys(x, aux)` optionally names each child for error messages and `named_parameters`.
    `match_for(aux)` optionally returns a function of x that gives x's children when flattening x
    would give exactly `aux`, else None: a faster check than flattening and comparing, made once
    per structure (PyTreeDef.match uses it).
    `unflatten_for(aux)` optionally returns a function of the children as positional arguments
    that does what unflatten(aux, children) does, made once per structure (PyTreeDef.builder).
    """
    if nodetype in _registry:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _registry[nodetype] = _NodeType(flatten, unflatten,
                                    keys or (lambda x, aux: [FlattenedIndexKey(i) for i in range(len(flatten(x)[0]))]),
                                    match_for,
                                    unflatten_for)


def _dict_flatten(d):
    keys = sorted(d)
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(dict, _dict_flatten, lambda keys, ch: dict(zip(keys, ch)),
                     lambda d, keys: [DictKey(k) for k in keys])


def _in_order(aux):  # a matcher for an OrderedDict of these keys in this order
    return lambda x: [x[k] for k in aux] if tuple(x) == aux else None


register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, ch: collections.OrderedDict(zip(keys, ch)),
                     lambda d, keys: [DictKey(k) for k in keys], match_for=_in_order)
register_pytree_node(collections.defaultdict, lambda d: (_dict_flatten(d)[0], (d.default_factory, tuple(sorted(d)))),
                     lambda aux, ch: collections.defaultdict(aux[0], zip(aux[1], ch)),
                     lambda d, aux: [DictKey(k) for k in aux[1]])


def _positions(x, aux) -> list:
    return [SequenceKey(i) for i in range(len(x))]


register_pytree_node(list, lambda x: (x, None), lambda _, ch: list(ch), _positions)
register_pytree_node(tuple, lambda x: (x, None), lambda _, ch: tuple(ch), _positions)
register_pytree_node(type(None), lambda x: ((), None), lambda _, ch: None, lambda x, aux: [])


def static_field(**kwargs) -> dataclasses.Field:
    """A dataclass field that is part of the structure, not a leaf (hyper-parameters, callables)."""
    metadata = dict(kwargs.pop("metadata", {}) or {}, static=True)
    return dataclasses.field(metadata=metadata, **kwargs)


def register_dataclass(cls: type) -> type:
    """Class decorator: a dataclass whose fields are children, except `static_field()` ones."""
    if not dataclasses.is_dataclass(cls):
        cls = dataclasses.dataclass(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    data = tuple(f.name for f in fields if not f.metadata.get("static", False))
    meta = tuple(f.name for f in fields if f.metadata.get("static", False))

    def flatten(x):
        return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

    def unflatten(aux, children):
        obj = object.__new__(cls)
        for n, v in zip(data, children):
            object.__setattr__(obj, n, v)
        for n, v in zip(meta, aux):
            object.__setattr__(obj, n, v)
        return obj

    register_pytree_node(cls, flatten, unflatten, lambda x, aux: [GetAttrKey(n) for n in data])
    return cls


_namedtuples: dict[type, _NodeType] = {}


def _node_type(x) -> _NodeType | None:
    t = type(x)
    node = _registry.get(t)
    if node is None and isinstance(x, tuple) and hasattr(t, "_fields"):  # namedtuple, made once per type
        node = _namedtuples.get(t)
        if node is None:
            node = _namedtuples[t] = _NodeType(lambda x: (tuple(x), None), lambda _, ch, t=t: t(*ch),
                                               lambda x, aux: [GetAttrKey(f) for f in type(x)._fields])
    return node


class PyTreeDef:
    """The structure of a pytree: hashable, comparable, and able to rebuild a tree from leaves."""
    __slots__ = ("node_type", "aux", "children", "num_leaves", "_key", "_hash", "_matcher", "_builder")

    def __init__(self, node_type, aux, children):
        self.node_type = node_type  # None for a leaf
        self.aux = aux
        self.children = children
        if node_type is None:
            self.num_leaves = 1
        else:
            count = 0
            for c in children:
                count += c.num_leaves
            self.num_leaves = count
        self._key = (node_type, aux, children)
        self._hash = None
        self._matcher = None
        self._builder = None

    def __eq__(self, other):
        return self is other or (isinstance(other, PyTreeDef) and self._key == other._key)

    def __hash__(self):
        if self._hash is None:  # jit hashes structures on every call: compute it once
            self._hash = hash(self._key)
        return self._hash

    def __reduce__(self):  # pickled without its generated matcher and builder
        return PyTreeDef, (self.node_type, self.aux, self.children)

    def __repr__(self):
        return f"PyTreeDef({self._describe()})"

    def _describe(self) -> str:
        if self.node_type is None:
            return "*"
        inner = ", ".join(c._describe() for c in self.children)
        if self.node_type is dict:
            inner = ", ".join(f"{k!r}: {c._describe()}" for k, c in zip(self.aux, self.children))
            return "{" + inner + "}"
        if self.node_type is list:
            return f"[{inner}]"
        if self.node_type is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.node_type is type(None):
            return "None"
        return f"{self.node_type.__name__}({inner})"

    def difference(self, other: "PyTreeDef", path: str = "") -> str | None:
        """Where `other` first differs from this structure, as 'at PATH: what differs' (None when
        they are equal): the message two structures that print alike (modules whose static fields
        differ) need."""
        where = path or "the top"
        if self.node_type is not other.node_type:
            return f"at {where}: {self._kind()} against {other._kind()}"
        if self.aux != other.aux:
            if self.node_type is dict:
                return f"at {where}: keys {sorted(self.aux, key=repr)} against {sorted(other.aux, key=repr)}"
            if isinstance(self.aux, tuple) and isinstance(other.aux, tuple) and len(self.aux) == len(other.aux):
                return _aux_difference(self.aux, other.aux, path)
            return f"at {where}: {_short(self.aux)} against {_short(other.aux)}"
        if len(self.children) != len(other.children):
            return f"at {where}: {len(self.children)} children against {len(other.children)}"
        keys = self.aux if self.node_type is dict else range(len(self.children))
        for key, a, b in zip(keys, self.children, other.children):
            found = a.difference(b, f"{path}[{key!r}]")
            if found:
                return found
        return None

    def _kind(self) -> str:
        return "a leaf" if self.node_type is None else f"a {self.node_type.__name__}"

    def match(self, tree: Any) -> list[Any] | None:
        """tree's leaves if tree has exactly this structure, else None: what tree_flatten would
        say, without building a structure to compare (jit checks its arguments with this on every
        call). The check is Python code generated for this structure on first use."""
        if self._matcher is None:
            self._matcher = _compile_matcher(self)
        return self._matcher(tree)

    def builder(self) -> Callable[[Sequence[Any]], Any]:
        """A function of a sequence of exactly num_leaves leaves that does what unflatten does,
        as Python code generated for this structure (jit rebuilds its outputs with it)."""
        if self._builder is None:
            try:
                self._builder = _compile_builder(self)
            except (SyntaxError, RecursionError, MemoryError):  # nested too deep for one expression
                self._builder = self.unflatten
        return self._builder

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"tree structure {self} expects {self.num_leaves} leaves, got {len(leaves)}")
        if self.node_type is None:
            return leaves[0]
        return self._build(iter(leaves))

    def _build(self, it):
        # jit rebuilds its outputs with this on every call: leaves inline, no call per leaf
        children = [next(it) if c.node_type is None else c._build(it) for c in self.children]
        node = _registry.get(self.node_type)
        return self.node_type(*children) if node is None else node.unflatten(self.aux, children)  # None: namedtuple


def _aux_difference(a: tuple, b: tuple, path: str) -> str:
    """The first difference of two nodes' static data: a module's fields are (name, structure,
    statics) entries, so a field whose sub-structure differs is followed down by its name."""
    entry_a, entry_b = next((x, y) for x, y in zip(a, b) if x != y)
    named = isinstance(entry_a, tuple) and entry_a and isinstance(entry_a[0], str)
    if named and isinstance(entry_b, tuple) and len(entry_a) == len(entry_b):
        inner = next((x, y) for x, y in zip(entry_a, entry_b) if x != y)
        if builtins.all(isinstance(v, PyTreeDef) for v in inner):
            return inner[0].difference(inner[1], f"{path}.{entry_a[0]}")
        if builtins.all(isinstance(v, tuple) for v in inner) and len(inner[0]) == len(inner[1]):  # statics among leaves
            k, x, y = next((k, x, y) for k, (x, y) in enumerate(zip(*inner)) if x != y)
            return f"at {path}.{entry_a[0]}[{k}]: {_short(x)} against {_short(y)}"
        return f"at {path}.{entry_a[0]}: {_short(inner[0])} against {_short(inner[1])}"
    return f"at {path or 'the top'}: {_short(entry_a)} against {_short(entry_b)}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


_LEAF = PyTreeDef(None, None, ())


class SourceBuilder:
    """Generated code under construction: objects it refers to become named constants."""

    def __init__(self):
        self.namespace: dict[str, Any] = {"_registry": _registry}

    def const(self, value) -> str:
        name = f"k{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def function(self, name: str, args: str, lines: list[str]) -> Callable:
        source = f"def {name}({args}):\n" + "".join(f"    {line}\n" for line in lines)
        exec(compile(source, f"<funcgrad.{name}>", "exec"), self.namespace)  # noqa: S102  (our generated code)
        return self.namespace[name]


def _compile_builder(treedef: PyTreeDef) -> Callable[[Sequence[Any]], Any]:
    """One expression that builds the tree from L, its leaves in order."""
    src = SourceBuilder()
    position = itertools.count()

    def expr(d: PyTreeDef) -> str:
        t = d.node_type
        if t is None:
            return f"L[{next(position)}]"
        kids = [expr(c) for c in d.children]
        node = _registry.get(t)
        if t is tuple:
            return "(" + "".join(f"{k}, " for k in kids) + ")"
        if t is list:
            return "[" + ", ".join(kids) + "]"
        if t is type(None):
            return "None"
        if t is dict:
            return "{" + ", ".join(f"{src.const(k)}: {v}" for k, v in zip(d.aux, kids)) + "}"
        if node is None:  # a namedtuple
            return f"{src.const(t)}({', '.join(kids)})"
        if node.unflatten_for is not None:
            return f"{src.const(node.unflatten_for(d.aux))}({', '.join(kids)})"
        return f"{src.const(node.unflatten)}({src.const(d.aux)}, [{', '.join(kids)}])"

    return src.function("build", "L", [f"return {expr(treedef)}"])


def _exactly_equal(a: Any, b: Any) -> bool:
    """a == b of two custom nodes' aux, telling apart equal values of other types (1, 1.0 and True)
    inside tuples, lists and dicts too: what a match gives back is rebuilt with the aux it matched."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and builtins.all(_exactly_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and builtins.all(_exactly_equal(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  (an ambiguous comparison, a NumPy array's: different)
        return False


def _compile_matcher(treedef: PyTreeDef) -> Callable[[Any], list[Any] | None]:
    """Straight-line code that walks a tree along treedef: every node's type and size, every
    dict's keys and every custom node's aux are checked; any difference returns None."""
    lines: list[str] = []
    src = SourceBuilder()
    const = src.const
    leaves: list[str] = []
    counter = itertools.count()

    def walk(var: str, d: PyTreeDef) -> None:
        t = d.node_type
        if t is None:  # still a leaf: not a node (tuples include namedtuples)
            lines.append(f"if type({var}) in _registry or isinstance({var}, tuple): return None")
            leaves.append(var)
            return
        if t is type(None):
            lines.append(f"if {var} is not None: return None")
            return
        n = len(d.children)
        lines.append(f"if type({var}) is not {const(t)}: return None")
        node = _registry.get(t)
        if t is tuple or t is list:
            lines.append(f"if len({var}) != {n}: return None")
            children = var
        elif t is dict:
            lines.append(f"if {var}.keys() != {const(set(d.aux))}: return None")
            children = f"[{var}[k] for k in {const(d.aux)}]"
        elif node is None:  # a namedtuple: its type fixes its length
            children = var
        elif node.match_for is not None:
            lines.append(f"c = {const(node.match_for(d.aux))}({var})")
            lines.append(f"if c is None or len(c) != {n}: return None")
            children = "c"
        else:
            lines.append(f"c, a = {const(node.flatten)}({var})")
            lines.append("c = tuple(c)")
            lines.append(f"if len(c) != {n} or not {const(_exactly_equal)}(a, {const(d.aux)}): return None")
            children = "c"
        names = [f"v{next(counter)}" for _ in range(n)]
        if n:
            lines.append(f"{', '.join(names)}{',' if n == 1 else ''} = {children}")
        for name, child in zip(names, d.children):
            walk(name, child)

    walk("x", treedef)
    return src.function("match", "x", lines + [f"return [{', '.join(leaves)}]"])


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    if is_leaf is None:
        for known in _recurring.get(type(tree), ()):
            leaves = known._matcher(tree) if known._matcher is not None else None
            if leaves is not None:
                return leaves, known
    leaves = []
    treedef = _flatten(tree, leaves, is_leaf)
    if is_leaf is None and treedef.node_type is not None:
        treedef = _remember(treedef, tree)
    return leaves, treedef


# The structures last flattened for each type of tree, the latest first. A training loop flattens
# the same model, gradients and optimiser state on every step; from a structure's second sighting
# on, its generated matcher checks and walks such a tree instead of building a PyTreeDef again
# (a 38-leaf GPT: 30 us against 112). One seen only once compiles nothing.
_recurring: dict[type, list[PyTreeDef]] = {}
_recurring_lock = threading.Lock()  # for _remember's updates; matching reads the lists without it
_RECURRING_PER_TYPE = 4
_RECURRING_TYPES = 256


def _no_match(tree: Any) -> None:
    return None


def _same_structure(a: PyTreeDef, b: PyTreeDef) -> bool:
    try:
        return a == b
    except (ValueError, TypeError):  # a custom node's aux that == cannot compare (a NumPy array): not known
        return False


def _remember(treedef: PyTreeDef, tree: Any) -> PyTreeDef:
    """tree's structure treedef, or the equal one flattened before where its matcher (compiled now)
    takes tree: equality lets statics differ in type (1 and True), the matcher does not."""
    with _recurring_lock:
        return _remembered(treedef, tree)


def _remembered(treedef: PyTreeDef, tree: Any) -> PyTreeDef:
    seen = _recurring.get(treedef.node_type)
    if seen is None:
        if len(_recurring) >= _RECURRING_TYPES:  # a bound on what the cache keeps alive
            _recurring.clear()
        _recurring[treedef.node_type] = [treedef]
        return treedef
    for i, known in enumerate(seen):
        if _same_structure(known, treedef):
            if known._matcher is None:
                try:
                    known._matcher = _compile_matcher(known)
                except (SyntaxError, RecursionError, MemoryError):  # too deep to generate: flattened each time
                    known._matcher = _no_match
            if known._matcher(tree) is not None:
                seen.insert(0, seen.pop(i))
                return known
            break
    seen.insert(0, treedef)
    del seen[_RECURRING_PER_TYPE:]
    return treedef


def _flatten(x, leaves, is_leaf):
    # the hot path of every jit call: a registry hit first, the namedtuple check only after a miss
    if is_leaf is not None and is_leaf(x):
        node = None
    else:
        node = _registry.get(type(x)) or (_node_type(x) if isinstance(x, tuple) else None)
    if node is None:
        leaves.append(x)
        return _LEAF
    children, aux = node.flatten(x)
    if is_leaf is not None:
        return PyTreeDef(type(x), aux, tuple([_flatten(c, leaves, is_leaf) for c in children]))
    defs = []
    for c in children:  # leaves inline, no call per leaf
        if type(c) in _registry or isinstance(c, tuple):
            defs.append(_flatten(c, leaves, None))
        else:
            leaves.append(c)
            defs.append(_LEAF)
    return PyTreeDef(type(x), aux, tuple(defs))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """Like tree_flatten, but each leaf comes with its path: a tuple of key strings, JAX's key
    entries (DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey) where the node says what they are."""
    out: list[tuple[tuple[str, ...], Any]] = []
    _walk_with_path(tree, (), is_leaf, out)
    return out, tree_structure(tree, is_leaf)


def _walk_with_path(x, path: tuple, is_leaf, out: list) -> None:
    """Append x's (path, leaf) pairs to out. A module function, not a closure calling itself,
    which would be a reference cycle left for the garbage collector on every call (grad checks
    its arguments with tree_flatten_with_path)."""
    node = None if (is_leaf is not None and is_leaf(x)) else _node_type(x)
    if node is None:
        out.append((path, x))
        return
    children, aux = node.flatten(x)
    for key, child in zip(node.keys(x, aux), list(children)):
        _walk_with_path(child, path + (key,), is_leaf, out)


def keystr(path: tuple[str, ...]) -> str:
    """'params['w1']' style rendering of a path from tree_flatten_with_path."""
    return "".join(path) if path else "<root>"


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply f leaf-wise; every tree in `rest` must have the structure of `tree`."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for i, r in enumerate(rest):
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: tree argument {i + 1} differs from the first tree "
                             f"{treedef.difference(r_def)} (structures {treedef} and {r_def})")
        others.append(r_leaves)
    build = treedef.builder() if treedef._matcher is not None else treedef.unflatten  # generated once it recurs
    return build([f(*xs) for xs in zip(leaves, *others)])


def tree_leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[tuple[tuple[str, ...], Any]]:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """f(path, leaf, *others) leaf-wise (a weight-decay mask by name, say); paths as in
    tree_flatten_with_path, every tree in `rest` of `tree`'s structure."""
    paths = iter([path for path, _ in tree_flatten_with_path(tree, is_leaf)[0]])  # in tree_map's leaf order
    return tree_map(lambda leaf, *xs: f(next(paths), leaf, *xs), tree, *rest, is_leaf=is_leaf)


_NO_INITIALIZER = object()


def tree_reduce(function: Callable, tree: Any, initializer: Any = _NO_INITIALIZER,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """functools.reduce of function over the leaves (from initializer, where given)."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        if not leaves:
            raise TypeError("tree_reduce of a tree without leaves needs an initializer")
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf is true (a leaf array: all of its elements)."""
    return builtins.all(bool(getattr(leaf, "all", lambda: leaf)()) for leaf in tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef, pytree_to_transpose: Any) -> Any:
    """An outer structure of inner structures turned into the inner structure of outer ones (a list
    of dicts into a dict of lists), as jax.tree_util.tree_transpose."""
    leaves, treedef = tree_flatten(pytree_to_transpose)
    n_outer, n_inner = outer_treedef.num_leaves, inner_treedef.num_leaves
    expected = tree_structure(outer_treedef.unflatten([inner_treedef.unflatten([0] * n_inner)] * n_outer))
    if treedef != expected:
        raise ValueError(f"tree_transpose: the tree is not {outer_treedef} of {inner_treedef}: "
                         f"{expected.difference(treedef)}")
    return inner_treedef.unflatten([outer_treedef.unflatten(leaves[j::n_inner]) for j in range(n_inner)])


def register_pytree_node_class(cls: type) -> type:
    """Class decorator (jax.tree_util's): instances flatten by their tree_flatten() -> (children,
    aux) and rebuild by the classmethod tree_unflatten(aux, children)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


class Partial(functools.partial):
    """functools.partial as a pytree (jax.tree_util.Partial): the bound arguments are its
    children and the function its structure, so a function with its arrays can pass through jit
    and be mapped over."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):  # flatten nested partials, as functools does
            args, kwargs = func.args + args, {**func.keywords, **kwargs}
            func = func.func
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, children: Partial(func, *children[0], **children[1]))
