"""The rest of jax.tree_util's API, built on the core: nodes registered with named children or as
static values, prefix broadcasting, pairwise reduction and structure helpers."""
from __future__ import annotations

import builtins
from typing import Any, Callable, Hashable, Iterable

from ._core import (_NO_INITIALIZER, PyTreeDef, _node_type, _short, register_pytree_node, tree_flatten, tree_leaves,
                    tree_map, tree_structure)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable, unflatten: Callable,
                              flatten: Callable | None = None) -> None:
    """register_pytree_node with named children (jax.tree_util's): flatten_with_keys(x) ->
    (((key, child), ...), aux); the keys appear in tree_flatten_with_path's paths."""
    def children(x):
        keyed, aux = flatten_with_keys(x)
        return [c for _, c in keyed], aux

    def keys(x, aux):
        return [k for k, _ in flatten_with_keys(x)[0]]
    register_pytree_node(nodetype, flatten or children, unflatten, keys=keys)


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: instances flatten by tree_flatten_with_keys() -> (((key, child), ...), aux)
    and rebuild by the classmethod tree_unflatten(aux, children)."""
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              getattr(cls, "tree_flatten", None))
    return cls


def register_static(cls: type) -> type:
    """Class decorator: instances are nodes without children, kept whole in the structure (so they
    must be hashable), as jax.tree_util.register_static."""
    register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux)
    return cls


def flatten_one_level(tree: Any) -> tuple[list[Any], Hashable]:
    """(children, aux) of a node, one level down; a leaf raises ValueError."""
    node = _node_type(tree)
    if node is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = node.flatten(tree)
    return list(children), aux


def _up_to(treedef: PyTreeDef, tree: Any, path: str = "") -> list[Any]:
    """The subtrees of tree at treedef's leaves (tree has treedef's structure down to them)."""
    if treedef.node_type is None:
        return [tree]
    if type(tree) is not treedef.node_type:
        raise ValueError(f"at {path or 'the top'}: the prefix has a {treedef.node_type.__name__}, the tree a "
                         f"{type(tree).__name__}")
    children, aux = flatten_one_level(tree)
    if aux != treedef.aux or len(children) != len(treedef.children):
        raise ValueError(f"at {path or 'the top'}: the prefix's {treedef._describe()} does not match {_short(tree)}")
    return [sub for k, (d, c) in enumerate(zip(treedef.children, children)) for sub in _up_to(d, c, f"{path}[{k}]")]


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """full_tree with each of its leaves replaced by the leaf of prefix_tree above it (a
    per-layer setting spread over each layer's arrays), as jax.tree_util.tree_broadcast."""
    leaves, treedef = tree_flatten(prefix_tree, is_leaf)
    return treedef.unflatten(tree_map(lambda _, p=p: p, sub, is_leaf=is_leaf)
                             for p, sub in zip(leaves, _up_to(treedef, full_tree)))


def tree_reduce_associative(operation: Callable, tree: Any, *, identity: Any = _NO_INITIALIZER,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """The leaves combined pairwise by an associative operation (a tree of log depth)."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _NO_INITIALIZER:
            raise TypeError("tree_reduce_associative of a tree without leaves needs an identity")
        return identity
    while len(leaves) > 1:
        leaves = [operation(a, b) for a, b in zip(leaves[::2], leaves[1::2])] + leaves[len(leaves) - len(leaves) % 2:]
    return leaves[0]


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every element is a leaf (None is a node without children)."""
    return builtins.all(tree_structure(x, is_leaf).node_type is None for x in iterable)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.node_type is None


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return list(treedef.children)


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple of trees of these structures."""
    return PyTreeDef(tuple, None, tuple(treedefs))
