"""Pytrees: flatten / unflatten / map over the built-in and registered containers."""
import dataclasses
import pickle
from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
import funcgrad.numpy as fnp

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


def test_ordered_and_default_dicts_are_nodes_as_in_jax():
    """A torch state_dict is an OrderedDict: its entries are leaves in insertion order (a defaultdict's
    in sorted order, keeping its default_factory), not one opaque leaf; the key order is structure."""
    tree = {"c": OrderedDict([("q", 6), ("p", 7)]), "d": defaultdict(list, {"k": 8, "j": 9})}
    leaves, treedef = fg.tree_flatten(tree)
    assert leaves == [6, 7, 9, 8]
    assert [fg.tree.keystr(p) for p, _ in fg.tree_flatten_with_path(tree)[0]] == \
        ["['c']['q']", "['c']['p']", "['d']['j']", "['d']['k']"]
    rebuilt = fg.tree_unflatten(treedef, [1, 2, 3, 4])
    assert type(rebuilt["c"]) is OrderedDict and list(rebuilt["c"].items()) == [("q", 1), ("p", 2)]
    assert type(rebuilt["d"]) is defaultdict and rebuilt["d"]["new"] == [] and rebuilt["d"]["j"] == 3
    assert treedef != fg.tree_structure({"c": OrderedDict([("p", 7), ("q", 6)]), "d": defaultdict(list, {})})
    params = OrderedDict([("w", np.ones(3)), ("b", np.zeros(()))])
    grads = fg.grad(lambda p: fnp.sum(p["w"] * 2) + p["b"])(params)
    assert type(grads) is OrderedDict and list(grads) == ["w", "b"]
    np.testing.assert_array_equal(grads["w"], [2, 2, 2])
    assert float(fg.jit(lambda p: p["w"].sum() + p["b"])(params)) == 3.0


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
    st.dictionaries(st.sampled_from("abc"), kids, max_size=3), st.builds(Point, kids, kids),
    st.dictionaries(st.sampled_from("abc"), kids, max_size=3).map(OrderedDict),
    st.dictionaries(st.sampled_from("abc"), kids, max_size=3).map(lambda d: defaultdict(int, d))), max_leaves=8)


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


def test_a_recurring_structure_is_matched_and_stays_exact():
    """tree_flatten keeps the structures it last saw per type: from a structure's second sighting
    on, a tree of it is matched (the generated matcher) and comes back with that same PyTreeDef
    and its own leaves. One that differs, if only in the type of a static value (1, 1.0 and True
    are equal), gets its own structure, so tree_map rebuilds it with its own statics."""
    @fg.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Scaled:
        weight: object
        factor: object = fg.static_field(default=1)

    def tree(w, factor=1):
        return {"w": w, "rest": [Scaled(np.zeros(1), factor), (3.0, None)]}
    _, first = fg.tree_flatten(tree(np.ones(2)))
    _, second = fg.tree_flatten(tree(np.ones(2)))
    fresh = tree(np.full(2, 5.0))
    leaves, third = fg.tree_flatten(fresh)
    assert first == second and third is second  # matched, not rebuilt
    assert [id(x) for x in leaves] == [id(fresh["rest"][0].weight), id(fresh["rest"][1][0]), id(fresh["w"])]
    for factor in [True, 1.0, 2]:
        other = tree(np.ones(2), factor)
        rebuilt = fg.tree_map(lambda x: x, other)["rest"][0].factor
        assert type(rebuilt) is type(factor) and rebuilt == factor
        (aux,) = fg.tree_flatten(other)[1].children[0].children[0].aux
        assert type(aux) is type(factor) and aux == factor
    back = fg.tree_map(lambda x: x, tree(np.ones(2)))["rest"][0].factor  # the first kind still matches
    assert type(back) is int and back == 1
    keys, d = fg.tree_flatten({"c": 2, "w": 1})
    assert keys == [2, 1] and d != third

    @fg.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Tagged:  # an aux that == cannot compare: never matched, flattened each time
        weight: object
        tag: object = fg.static_field(default=None)
    for _ in range(3):
        leaves, treedef = fg.tree_flatten(Tagged(1.0, np.arange(3)))
        assert leaves == [1.0] and treedef._matcher is None


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


def test_jax_tree_util_extras_with_paths_reduce_all_transpose():
    from funcgrad import tree as T
    tree = {"a": [1.0, np.arange(3.0)], "b": (2.0, None, {"c": 4.0})}
    paths = [T.keystr(p) for p, _ in T.tree_leaves_with_path(tree)]
    assert paths == ["['a'][0]", "['a'][1]", "['b'][0]", "['b'][2]['c']"]
    named = T.tree_map_with_path(lambda path, x, y: (T.keystr(path), y), tree, T.tree_map(lambda x: 7, tree))
    assert named["b"][2]["c"] == ("['b'][2]['c']", 7) and named["b"][1] is None
    assert T.tree_reduce(lambda acc, x: acc + np.sum(x), tree, 0.0) == 10.0
    assert T.reduce(max, [3, 9, 2]) == 9 and T.map(lambda x: x * 2, [1, 2]) == [2, 4]
    with pytest.raises(TypeError, match="needs an initializer"):
        T.tree_reduce(max, [])
    assert T.tree_all([True, np.ones(2) > 0]) and not T.tree_all([True, np.array([1, 0])]) and T.all({})
    rows = [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": 5, "y": 6}]
    columns = T.tree_transpose(T.tree_structure([0, 0, 0]), T.tree_structure({"x": 0, "y": 0}), rows)
    assert columns == {"x": [1, 3, 5], "y": [2, 4, 6]}
    with pytest.raises(ValueError, match="tree_transpose: the tree is not"):
        T.tree_transpose(T.tree_structure([0, 0]), T.tree_structure({"x": 0, "y": 0}), rows)


def test_register_pytree_node_class_and_partial_pass_through_transforms():
    from funcgrad import tree as T

    @T.register_pytree_node_class
    class Scaled:
        def __init__(self, w, name):
            self.w, self.name = w, name

        def tree_flatten(self):
            return (self.w,), self.name

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(children[0], aux)

    g = fg.grad(lambda p: fnp.sum(p.w ** 2))(Scaled(np.arange(3.0), "n"))
    assert isinstance(g, Scaled) and g.name == "n" and np.allclose(g.w, [0.0, 2.0, 4.0])
    scale = T.Partial(lambda s, x: s * x, np.float32(3.0))
    assert np.allclose(fg.jit(lambda f, x: f(x))(scale, np.ones(2, np.float32)), 3.0)
    assert np.allclose(fg.grad(lambda f: fnp.sum(f(np.ones(2))))(T.Partial(lambda s, x: s * x, 2.0)).args[0], 2.0)
    assert T.Partial(T.Partial(lambda a, b: a - b, 5.0), 1.0)() == 4.0  # nested partials flatten


def test_ravel_pytree_round_trip_dtypes_and_gradients():
    from funcgrad.flatten_util import ravel_pytree
    tree = {"w": np.ones((2, 3), np.float32), "b": (np.arange(2, dtype=np.int32), None), "c": np.float32(5.0)}
    flat, unravel = ravel_pytree(tree)
    assert flat.dtype == np.float32 and flat.shape == (9,)  # leaves in flattening order: b, c, w
    assert np.array_equal(flat, [0, 1, 5, 1, 1, 1, 1, 1, 1])
    back = unravel(flat * 2)
    assert back["b"][0].dtype == np.int32 and np.array_equal(back["b"][0], [0, 2]) and back["b"][1] is None
    assert back["w"].shape == (2, 3) and float(back["c"]) == 10.0
    with pytest.raises(fg.ShapeError, match=r"shape \(9,\) for this tree, got \(3,\)"):
        unravel(np.ones(3))
    params = {"a": np.arange(3.0), "b": np.ones((2, 2))}
    vector, unravel = ravel_pytree(params)
    def loss(v):
        p = unravel(v)
        return fnp.sum(p["a"] ** 3) + fnp.sum(p["b"] ** 2) * p["a"][0]
    hessian = fg.hessian(loss)(vector)
    expected = np.zeros((7, 7))
    expected[[0, 1, 2], [0, 1, 2]] = 6 * params["a"]
    expected[0, 3:] = expected[3:, 0] = 2.0
    expected[np.arange(3, 7), np.arange(3, 7)] = 2 * params["a"][0]
    assert np.allclose(hessian, expected)
    assert ravel_pytree({})[0].shape == (0,)


def test_path_entries_are_jax_key_entries_that_read_as_strings():
    from funcgrad.tree import DictKey, GetAttrKey, SequenceKey
    paths = [p for p, _ in fg.tree.tree_flatten_with_path({"a": [1, (2, 3)], "b": Point(4, 5)})[0]]
    assert [type(e).__name__ for e in paths[1]] == ["DictKey", "SequenceKey", "SequenceKey"]
    assert [type(e).__name__ for e in paths[3]] == ["DictKey", "GetAttrKey"]
    assert paths[1][0].key == "a" and paths[1][2].idx == 0 and paths[3][1].name == "x"
    assert paths[1] == ("['a']", "[1]", "[0]")  # still the strings they always were
    assert [fg.tree.keystr(p) for p in paths] == ["['a'][0]", "['a'][1][0]", "['a'][1][1]", "['b'].x", "['b'].y"]
    assert DictKey("a") == DictKey("a") and SequenceKey(2) == "[2]" and GetAttrKey("w") == ".w"
    restored = pickle.loads(pickle.dumps(paths[3]))
    assert restored == paths[3] and restored[0].key == "b" and restored[1].name == "x"


def test_the_rest_of_jax_tree_util_registered_keys_static_broadcast_and_structures():
    """Each against what jax.tree_util gives for the same call (the expected values below)."""
    tree = fg.tree

    @tree.register_pytree_with_keys_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten_with_keys(self):
            return ((tree.GetAttrKey("a"), self.a), (tree.GetAttrKey("b"), self.b)), "pair"

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == "pair"
            return cls(*children)

    paths = [tree.keystr(p) for p, _ in tree.tree_leaves_with_path({"p": Pair(1, [2, 3])})]
    assert paths == ["['p'].a", "['p'].b[0]", "['p'].b[1]"]
    doubled = fg.jit(lambda p: tree.map(lambda v: v * 2, p))(Pair(fnp.asarray(1.0), fnp.asarray(2.0)))
    assert (float(doubled.a), float(doubled.b)) == (2.0, 4.0)

    @tree.register_static
    class Config:
        def __init__(self, n):
            self.n = n

        def __hash__(self):
            return hash(self.n)

        def __eq__(self, other):
            return isinstance(other, Config) and other.n == self.n
    assert tree.leaves([Config(3), 4]) == [4]
    assert tree.structure([Config(3)]) == tree.structure([Config(3)]) != tree.structure([Config(4)])

    full = {"a": [0, (0, 0)], "b": [[0, 0], None]}
    assert tree.broadcast({"a": 1, "b": [2, 3]}, full) == {"a": [1, (1, 1)], "b": [[2, 2], None]}
    with pytest.raises(ValueError, match=r"the prefix's \{'a': \*, 'b': \*\} does not match"):
        tree.broadcast({"a": 1, "b": 2}, {"a": 1, "c": 2})
    assert tree.reduce_associative(lambda x, y: x + y, [1, 2, 3, 4, 5]) == 15
    assert tree.reduce_associative(lambda x, y: x + y, [], identity=0) == 0
    with pytest.raises(TypeError, match="needs an identity"):
        tree.reduce_associative(lambda x, y: x + y, [])
    assert tree.flatten_one_level({"a": 1, "b": [2]}) == ([1, [2]], ("a", "b"))
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tree.flatten_one_level(1)
    assert (tree.all_leaves([1, 2.0, np.ones(2)]), tree.all_leaves([1, None]), tree.all_leaves([1, [2]])) == \
        (True, False, False)
    s = tree.structure([1, (2, 3)])
    assert tree.treedef_children(s) == [tree.structure(1), tree.structure((2, 3))]
    assert not tree.treedef_is_leaf(s)
    assert tree.treedef_is_leaf(tree.structure(1))
    assert tree.unflatten(tree.treedef_tuple([s, tree.structure(1)]), [1, 2, 3, 4]) == ([1, (2, 3)], 4)
