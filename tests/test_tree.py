"""Pytrees: flatten / unflatten / map over the built-in and registered containers."""
import dataclasses
from collections import namedtuple

import pytest

import funcgrad as fg

Point = namedtuple("Point", ["x", "y"])


def test_flatten_orders_dict_keys_and_round_trips():
    tree = {"b": [1, (2, 3)], "a": None, "c": Point(4, {"z": 5})}
    leaves, treedef = fg.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5]  # "a" (None) has no leaves; keys sorted
    assert fg.tree_unflatten(treedef, leaves) == tree
    assert treedef.num_leaves == 5
    assert fg.tree_leaves(tree) == leaves
    assert fg.tree_structure(tree) == treedef
    assert hash(treedef) == hash(fg.tree_structure({"c": Point(0, {"z": 0}), "b": [0, (0, 0)], "a": None}))


def test_tree_map_over_several_trees_and_structure_errors():
    a = {"w": 1, "b": [2, 3]}
    b = {"w": 10, "b": [20, 30]}
    assert fg.tree_map(lambda x, y: x + y, a, b) == {"w": 11, "b": [22, 33]}
    with pytest.raises(ValueError, match="structure"):
        fg.tree_map(lambda x, y: x + y, a, {"w": 1, "b": [2]})
    assert fg.tree_map(lambda x: x * 2, [1, [2]], is_leaf=lambda x: isinstance(x, list) and len(x) == 1) == [2, [2, 2]]


def test_unflatten_checks_leaf_count():
    _, treedef = fg.tree_flatten([1, 2])
    with pytest.raises(ValueError, match="expects 2 leaves, got 3"):
        fg.tree_unflatten(treedef, [1, 2, 3])


def test_register_pytree_node_and_paths():
    class Box:
        def __init__(self, items):
            self.items = items

    fg.register_pytree_node(Box, lambda b: (b.items, None), lambda aux, ch: Box(list(ch)),
                            lambda b, aux: [f".items[{i}]" for i in range(len(b.items))])
    leaves, treedef = fg.tree_flatten({"box": Box([1, 2])})
    assert leaves == [1, 2]
    assert fg.tree_unflatten(treedef, [3, 4])["box"].items == [3, 4]
    paths, _ = fg.tree_flatten_with_path({"box": Box([1, 2]), "p": Point(1, 2)})
    assert [fg.tree.keystr(p) for p, _ in paths] == ["['box'].items[0]", "['box'].items[1]", "['p'].x", "['p'].y"]
    with pytest.raises(ValueError, match="already registered"):
        fg.register_pytree_node(Box, lambda b: ((), None), lambda aux, ch: Box([]))


def test_register_dataclass_with_static_fields():
    @fg.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Layer:
        weight: object
        bias: object
        activation: str = fg.static_field(default="relu")

    layer = Layer(1.0, 2.0, "tanh")
    leaves, treedef = fg.tree_flatten(layer)
    assert leaves == [1.0, 2.0]
    doubled = fg.tree_map(lambda v: v * 2, layer)
    assert isinstance(doubled, Layer) and doubled.weight == 2.0 and doubled.activation == "tanh"
    assert fg.tree_structure(Layer(0, 0, "relu")) != treedef  # static fields are part of the structure


def test_treedef_repr_is_readable():
    assert repr(fg.tree_structure({"a": [1, (2,)], "b": None})) == "PyTreeDef({'a': [*, (*,)], 'b': None})"
