"""Pytrees: nested containers of arrays, flattened to a list of leaves and a structure.

dict (sorted keys), OrderedDict (its order), defaultdict (sorted keys), list, tuple, namedtuple and
None are built in (jax.tree_util's nodes); any other type joins with
`register_pytree_node`, the `register_pytree_node_class` decorator (jax.tree_util's) or, for
dataclasses, the `register_dataclass` decorator. The functions also go by jax.tree's short names
(`fg.tree.map`, `fg.tree.leaves`, ...).

_core.py holds the registry, PyTreeDef and flattening (with the code it generates per structure
for jit's hot path); _jax_compat.py the rest of jax.tree_util's helpers.
"""
from ._core import (DictKey, FlattenedIndexKey, GetAttrKey, Partial, PyTreeDef, SequenceKey, keystr,
                    register_dataclass, register_pytree_node, register_pytree_node_class, static_field, tree_all,
                    tree_flatten, tree_flatten_with_path, tree_leaves, tree_leaves_with_path, tree_map,
                    tree_map_with_path, tree_reduce, tree_structure, tree_transpose, tree_unflatten)
from ._core import SourceBuilder  # noqa: F401  (nn.module generates code with it)
from ._jax_compat import (all_leaves, flatten_one_level, register_pytree_with_keys, register_pytree_with_keys_class,
                          register_static, tree_broadcast, tree_reduce_associative, treedef_children, treedef_is_leaf,
                          treedef_tuple)

__all__ = [
    "PyTreeDef", "Partial", "register_pytree_node", "register_pytree_node_class", "register_dataclass",
    "static_field", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "tree_reduce", "tree_all",
    "tree_transpose", "keystr", "DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "register_static", "tree_broadcast",
    "tree_reduce_associative", "all_leaves", "flatten_one_level", "treedef_is_leaf", "treedef_children",
    "treedef_tuple",
]

# jax.tree's short names
all = tree_all  # noqa: A001
flatten, flatten_with_path, leaves, leaves_with_path = tree_flatten, tree_flatten_with_path, tree_leaves, \
    tree_leaves_with_path
map, map_with_path, reduce, structure = tree_map, tree_map_with_path, tree_reduce, tree_structure  # noqa: A001
transpose, unflatten = tree_transpose, tree_unflatten
broadcast, reduce_associative, static = tree_broadcast, tree_reduce_associative, register_static
