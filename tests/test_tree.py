"""Pytrees: flatten / unflatten / map over the built-in and registered containers."""
import dataclasses
import pickle
from collections import namedtuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ---- PyTreeDef.match: what jit checks its arguments with instead of flattening ---------------------
_leaf = st.one_of(st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=2))
_trees = st.recursive(_leaf | st.none(), lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
    st.dictionaries(st.sampled_from("abc"), kids, max_size=3), st.builds(Point, kids, kids)), max_leaves=8)


@given(_trees, _trees)
@settings(max_examples=300, deadline=None)
def test_match_agrees_with_flattening(a, b):
    leaves_a, def_a = fg.tree_flatten(a)
    leaves_b, def_b = fg.tree_flatten(b)
    assert def_a.match(a) == leaves_a
    assert def_a.match(b) == (leaves_b if def_b == def_a else None)


def test_match_checks_custom_nodes_by_their_aux():
    class Box:
        def __init__(self, items, tag):
            self.items, self.tag = items, tag

    fg.register_pytree_node(Box, lambda b: (b.items, b.tag), lambda tag, ch: Box(list(ch), tag))
    treedef = fg.tree_structure([Box([1, 2], "x")])
    assert treedef.match([Box([5, 6], "x")]) == [5, 6]
    assert treedef.match([Box([5, 6], "y")]) is None  # another aux
    assert treedef.match([Box([5], "x")]) is None  # another child count
    assert treedef.match([Box([5, [6]], "x")]) is None  # a leaf became a node
    assert treedef.match((Box([5, 6], "x"),)) is None  # a tuple, not a list


def test_match_of_modules_follows_their_layout():
    from funcgrad import nn
    k1, k2 = fg.random.split(fg.random.key(0))
    model = nn.Sequential([nn.Linear(3, 4, key=k1), nn.relu, nn.Linear(4, 2, key=k2)])
    leaves, treedef = fg.tree_flatten(model)
    assert treedef.match(model) == leaves
    copy = fg.tree_map(lambda x: x * 2, model)
    assert [id(x) for x in treedef.match(copy)] == [id(x) for x in fg.tree_leaves(copy)]
    other = nn.Sequential([nn.Linear(3, 4, key=k1), nn.tanh, nn.Linear(4, 2, key=k2)])
    assert treedef.match(other) is None  # another activation (a static leaf)
    assert treedef.match(nn.Sequential([nn.Linear(3, 4, key=k1), nn.relu])) is None
    assert treedef.match(nn.Sequential([nn.Linear(3, 5, key=k1), nn.relu, nn.Linear(5, 2, key=k2)])) is None
    no_bias = model.layers[0].replace(bias=None)
    assert fg.tree_structure(no_bias) != fg.tree_structure(model.layers[0])
    assert fg.tree_structure(model.layers[0]).match(no_bias) is None  # an array became a static None
    grown = fg.tree_map(lambda x: x, model)
    grown.layers.append(nn.relu)  # a list inside a module can change in place
    assert treedef.match(grown) is None


@given(_trees)
@settings(max_examples=200, deadline=None)
def test_builder_rebuilds_what_unflatten_does(tree):
    leaves, treedef = fg.tree_flatten(tree)
    rebuilt = treedef.builder()(leaves)
    assert rebuilt == tree == treedef.unflatten(leaves)
    assert fg.tree_structure(rebuilt) == treedef


def test_builder_of_modules_and_of_very_deep_trees():
    from funcgrad import nn
    k1, k2 = fg.random.split(fg.random.key(0))
    model = nn.Sequential([nn.Linear(3, 4, key=k1), nn.relu, nn.Linear(4, 2, key=k2)])
    leaves, treedef = fg.tree_flatten(model)
    new = [fg.numpy.zeros_like(x) for x in leaves]
    built, reference = treedef.builder()(new), treedef.unflatten(new)
    assert type(built) is nn.Sequential and built.layers[1] is nn.relu
    assert [vars(m).keys() for m in built.layers[::2]] == [vars(m).keys() for m in reference.layers[::2]]
    assert [id(x) for x in fg.tree_leaves(built)] == [id(x) for x in new]
    assert built.layers[0].in_features == 3 and built.layers[2].out_features == 2
    assert pickle.loads(pickle.dumps(treedef)) == treedef  # its generated code is not pickled
    deep = 7
    for _ in range(400):  # deeper than one Python expression may nest
        deep = [deep]
    leaves, treedef = fg.tree_flatten(deep)
    assert treedef.builder()([8]) == treedef.unflatten([8])
