"""The combimots chapter's pieces beyond its notebook: the reaction space against brute force, the selection rules,
the backup, the random baseline's coverage, metrics by hand, bad input. Tiny libraries, seconds."""
import math

import numpy as np
import pytest
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

from icml25nb.generative import combimots as C
from icml25nb.pareto import hypervolume, nondominated_mask

TINY = ["OC(=O)c1ccc(Br)cc1", "Nc1ccccc1", "OB(O)c1ccccc1", "O=Cc1ccccc1", "C1CCNCC1", "O=S(=O)(Cl)c1ccccc1"]


@pytest.fixture(scope="module")
def tiny():
    return C.ReactionSpace(TINY)


def test_partners_are_symmetric_on_the_whole_library():
    sp = C.ReactionSpace(C.all_building_blocks())
    for a in sp.blocks:
        for b in sp.partners(a):
            assert a in sp.partners(b)
        assert len(set(sp.partners(a))) == len(sp.partners(a))


def test_enumeration_against_a_double_loop(tiny):
    want = set()
    for a in tiny.blocks:
        for b in tiny.blocks:
            for t in tiny.templates:
                want.update(tiny.run_template(t, (a, b)) if (t, 0) in tiny.roles(a) and (t, 1) in tiny.roles(b) else [])
    assert tiny.enumerate_products() == want and len(want) >= 8
    for a in tiny.blocks:  # react is symmetric as a set and every product is a partner pair's
        for b in tiny.blocks:
            assert {s.product for s in tiny.react(a, b)} == {s.product for s in tiny.react(b, a)}
            if tiny.react(a, b):
                assert b in tiny.partners(a)


def test_products_are_sanitised_canonical_molecules(tiny):
    for p in tiny.enumerate_products():
        assert Chem.MolToSmiles(Chem.MolFromSmiles(p)) == p


def _kids(search, P, N, W):
    return [C._Node((f"m{i}",), (), frozenset(), np.asarray(p, float), np.asarray(w, float), N=n)
            for i, (p, n, w) in enumerate(zip(P, N, W))]


def test_pareto_selection_is_uniform_on_the_nondominated_ucb_vectors(tiny):
    s = C.ParetoMCTS(tiny, diversity_penalty=False, seed=3)
    P = [[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.4, 0.4], [0.1, 0.1]]
    s.n_obj = 2
    kids = _kids(s, P, [0] * 5, [[0, 0]] * 5)
    picks = np.bincount([int(s._select(kids).molecules[0][1:]) for _ in range(3000)], minlength=5)
    assert picks[3] == picks[4] == 0  # dominated UCB vectors are never chosen
    assert all(abs(k / 3000 - 1 / 3) < 0.04 for k in picks[:3])  # the three non-dominated ones uniformly


def test_visits_move_the_pareto_choice(tiny):
    "A visited child with a poor mean gets a smaller UCB (Q + bonus shrinks with N) and drops out of the front."
    s = C.ParetoMCTS(tiny, diversity_penalty=False, seed=0)
    s.n_obj = 2
    kids = _kids(s, [[0.5, 0.5], [0.5, 0.5]], [50, 0], [[0.0, 0.0], [0.0, 0.0]])
    assert all(s._select(kids).molecules == ("m1",) for _ in range(20))


@pytest.mark.parametrize("cls", [C.ScalarMCTS, C.MeanObjectiveMCTS])
def test_scalarised_selection_is_the_argmax_first_on_ties(tiny, cls):
    s = cls(tiny, diversity_penalty=False, seed=0)
    s.n_obj = 2
    kids = _kids(s, [[0.2, 0.2], [0.9, 0.1], [0.1, 0.9], [0.4, 0.4]], [1] * 4, [[0, 0]] * 4)
    assert {s._select(kids).molecules for _ in range(50)} == {("m1",)}  # means 0.2, 0.5, 0.5, 0.4: the first 0.5
    fresh = _kids(s, [[0.2, 0.2], [0.9, 0.9]], [0, 0], [[0, 0]] * 2)  # n = 0: every score is 0, the first child wins
    assert s._select(fresh) is fresh[0]


def test_reuse_penalty_changes_the_choice(tiny):
    s = C.MeanObjectiveMCTS(tiny, seed=0)
    s.n_obj = 2
    kids = _kids(s, [[0.6, 0.6], [0.5, 0.5]], [1, 1], [[0, 0], [0, 0]])
    kids[0].blocks, kids[1].blocks = frozenset({"x"}), frozenset({"y"})
    s.counts.update({"x": 1, "y": 1})
    assert s._select(kids) is kids[0]
    s.counts.update({"x": 40})  # exp(-40/100) = 0.67 < 0.5 / 0.6
    assert s._select(kids) is kids[1]


def _authors_scalar(Y):
    "The authors' scalarize value of a tuple with objective rows Y: activities averaged, the last two from row 0."
    return (Y[:, 0].mean() + Y[:, 1].mean() + Y[0, 2] + Y[0, 3]) / 4


def test_authors_scalarize_values_every_node_as_their_generator_does(tiny):
    "Partial tuples read QED and SA (the docking slots) on the block just added; products on themselves."
    s = C.ScalarMCTS(tiny, seed=0)
    s.run(12)
    two = [k for k in s.nodes if len(k) == 2] + [(a, b) for a in tiny.blocks for b in tiny.partners(a)][:5]
    assert two
    for key in two + [(b,) for b in tiny.blocks]:
        Y = np.array([C.objectives(m) for m in key])
        assert s._value(key) == pytest.approx([_authors_scalar(Y)], abs=1e-12)
    for key, nd in s.nodes.items():
        if key:
            assert nd.P.shape == (1,) and nd.P[0] == pytest.approx(_authors_scalar(
                np.array([C.objectives(m) for m in key])), abs=1e-12)
    # the first-molecule rule matters: swapping the tuple's order changes the value when QED/SA differ
    a, b = tiny.blocks[0], tiny.blocks[1]
    assert s._value((a, b))[0] != pytest.approx(s._value((b, a))[0])
    assert C.MeanObjectiveMCTS(tiny)._value((a, b)) == pytest.approx(C.MeanObjectiveMCTS(tiny)._value((b, a)))


def test_authors_scalarize_backup_is_scalar(tiny):
    "W of each visited node is the sum of the scalar values of the products its rollouts reached."
    s = C.ScalarMCTS(tiny, seed=0)
    prods = s.run(10)
    for nd in s.nodes.values():
        if nd.N:
            assert nd.W.shape == (1,)
    made = [n for n in s.nodes.values() if len(n.molecules) == 1 and n.log and n.N]
    for nd in made:  # a product is a leaf (one reaction): each visit backs up its own value
        assert nd.W[0] == pytest.approx(nd.N * nd.P[0])
    for p in prods:  # reported scores are the product's full objective vector, ranked in all four objectives
        np.testing.assert_array_equal(p.scores, C.objectives(p.smiles))
    assert sum(k.N for k in s.root.children) == 10


def test_backup_with_one_reaction(tiny):
    "Each rollout adds the final product's vector to every selected node on its path (root excluded)."
    s = C.ParetoMCTS(tiny, seed=2)
    s.run(1)
    prod = [v for v in s.nodes.values() if len(v.molecules) == 1 and v.log and v.N]
    assert len(prod) == 1
    pair = s.nodes[prod[0].log[0].reactants] if prod[0].log[0].reactants in s.nodes else \
        s.nodes[prod[0].log[0].reactants[::-1]]
    first = s.nodes[(pair.molecules[1],)]
    for nd in (prod[0], pair, first):
        assert nd.N == 1 and np.array_equal(nd.W, prod[0].P)
    assert s.root.N == 0
    s.run(9)
    assert sum(k.N for k in s.root.children) == 10


def test_tuple_objective_is_the_mean(tiny):
    s = C.ParetoMCTS(tiny, seed=0)
    s.run(3)
    for key, nd in s.nodes.items():
        if len(key) == 2:
            np.testing.assert_allclose(nd.P, (C.objectives(key[0]) + C.objectives(key[1])) / 2)


def test_random_rollouts_cover_a_tiny_space(tiny):
    prods = C.random_rollouts(tiny, n_rollouts=400, seed=0)
    assert {p.smiles for p in prods} == tiny.enumerate_products()
    again = C.random_rollouts(tiny, n_rollouts=400, seed=0)
    assert [p.smiles for p in again] == [p.smiles for p in prods]
    assert [p.smiles for p in C.random_rollouts(tiny, n_rollouts=400, seed=1)] != [p.smiles for p in prods]


@pytest.mark.parametrize("cls", [C.ScalarMCTS, C.MeanObjectiveMCTS])
def test_scalarised_search_is_deterministic_and_two_reactions_replay(tiny, cls):
    a = [p.smiles for p in cls(tiny, seed=0).run(20)]
    b = [p.smiles for p in cls(tiny, seed=5).run(20)]
    assert a == b  # argmax with first-on-ties: no random draw
    prods = cls(tiny, seed=0, max_reactions=2).run(15)
    assert any(len(p.log) == 2 for p in prods)
    for p in prods:
        assert tiny.replay(p.log) == p.smiles
        assert len(p.log) == 1 or p.log[0].product in p.log[1].reactants


def test_front_ranks_and_metrics_by_hand(tiny):
    prods = C.random_rollouts(tiny, n_rollouts=30, seed=4)
    Y = np.array([p.scores for p in prods])
    front = nondominated_mask(Y, maximise=True)
    assert [p.rank == 0 for p in prods] == front.tolist()
    m = C.front_metrics(prods)
    F = Y[front]
    assert m["front_size"] == front.sum() and m["n_products"] == len(prods)
    assert m["hypervolume"] == pytest.approx(hypervolume(Y, np.zeros(4), maximise=True), abs=1e-12)
    assert m["spread"] == pytest.approx(np.mean(F.max(0) - F.min(0)))
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=3, fpSize=2048)
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(p.smiles)) for p, f in zip(prods, front) if f]
    sims = [DataStructs.TanimotoSimilarity(fps[i], fps[j]) for i in range(len(fps)) for j in range(i)]
    assert m["diversity"] == pytest.approx(1 - np.mean(sims), abs=1e-12)
    assert C.dominated_pairs(F) == 0 and C.dominated_pairs(Y) > 0


def test_fingerprints_set_the_rdkit_bits():
    bits = rdFingerprintGenerator.GetMorganGenerator(radius=3, fpSize=2048).GetFingerprintAsNumPy(
        Chem.MolFromSmiles("Nc1ccccc1"))
    P = C.fingerprints(["Nc1ccccc1"])
    got = np.unpackbits(P.view(np.uint8), bitorder="little")
    np.testing.assert_array_equal(got, bits)


def test_custom_references():
    f = C.ProxyObjectives({"aspirin": "CC(=O)Oc1ccccc1C(=O)O"})
    assert f.n_obj == 3 and f("CC(=O)Oc1ccccc1C(=O)O")[0] == 1.0
    assert f.names[0] == "similarity to aspirin"


def test_library_draws():
    a, b = C.draw_library(48, 0), C.draw_library(48, 0)
    assert a == b and len(set(a)) == 48 and set(a) <= set(C.all_building_blocks())
    assert C.draw_library(48, 1) != a


def test_bad_input(tiny):
    with pytest.raises(ValueError, match="n_blocks"):
        C.draw_library(61, 0)
    with pytest.raises(ValueError, match="scale"):
        C.experiment("huge", 0)
    with pytest.raises(ValueError, match="seed"):
        C.experiment("fast", -1)
    with pytest.raises(ValueError, match=r"blocks\[1\] is not a valid molecule"):
        C.ReactionSpace(["CCO", "C1CC"])
    with pytest.raises(ValueError, match="is not a reaction SMARTS"):
        C.ReactionSpace(["CCO"], {"bad": "not a reaction"})
    with pytest.raises(ValueError, match="templates must be"):
        C.ReactionSpace(["CCO"], {})
    with pytest.raises(TypeError, match="objectives must be callable"):
        C.ParetoMCTS(tiny, objectives=3)
    with pytest.raises(ValueError, match="objectives must return a finite vector"):
        C.ParetoMCTS(tiny, objectives=lambda s: np.array([np.nan]))
    with pytest.raises(ValueError, match="products must hold"):
        C.front_metrics([])
    with pytest.raises(ValueError, match="log must hold"):
        tiny.replay([])
    with pytest.raises(ValueError, match="unknown template"):
        tiny.replay([C.Step("nope", ("Nc1ccccc1", "O=Cc1ccccc1"), "C")])
    with pytest.raises(ValueError, match="n_bits must be a multiple of 64"):
        C.fingerprints(["CCO"], n_bits=100)


def test_replicate_root_order_by_hand():
    "The authors' replicate=True root: template order, reactant order, SMILES sorted within a reactant, first kept."
    blocks = [C.canonical_smiles(b) for b in TINY + ["Nc1ccc(F)cc1", "Brc1ccccc1"]]
    space = C.ReactionSpace(blocks, root_order="replicate")
    acids, amines = ["O=C(O)c1ccc(Br)cc1"], sorted(["Nc1ccccc1", "C1CCNCC1", "Nc1ccc(F)cc1"])
    want = acids + amines + ["O=S(=O)(Cl)c1ccccc1", "O=Cc1ccccc1", "Brc1ccccc1", "OB(O)c1ccccc1"]
    # amide coupling: acids, amines; sulfonamide: the sulfonyl chloride (amines already listed); reductive amination:
    # the aldehyde; Suzuki: aryl bromides sorted (4-bromobenzoic acid already listed), boronic acids; Buchwald: none new
    assert space.root_blocks == want
    given = C.ReactionSpace(blocks)
    assert given.root_blocks == blocks and set(space.root_blocks) == set(blocks)
    with pytest.raises(ValueError, match="root_order"):
        C.ReactionSpace(blocks, root_order="random")


@pytest.mark.parametrize("order", C.BLOCK_ORDERS)
def test_library_orders_and_the_scalarised_first_choice(order):
    "Each order lists the same library; a scalarised search's first rollout starts from the root's first block."
    lib = C.draw_library(48, 1)
    space = C.library_space(lib, order)
    assert set(space.blocks) == set(lib) and set(space.root_blocks) == {b for b in lib if space.roles(b)}
    assert space.blocks == (lib if order == "class" else sorted(lib))
    if order == "sorted":
        assert space.root_blocks == sorted(space.root_blocks)
    # partners: template order, then block order, so sorted within a reactant in the authors' two orders
    p = space.partners("Nc1ccccc1")
    acids = [b for b in p if ("amide coupling", 0) in space.roles(b)]
    assert acids == ([b for b in lib if b in acids] if order == "class" else sorted(acids))
    s = C.ScalarMCTS(space, seed=0)
    prods = s.run(1)
    assert space.root_blocks[0] in prods[0].log[0].reactants


def test_reordered_space_shares_caches():
    lib = C.draw_library(10, 3)
    a = C.library_space(lib, "class")
    b = C.library_space(lib, "replicate", like=a)
    assert b._products is a._products and b.root_order == "replicate" and b.blocks == sorted(lib)
    assert a.enumerate_products() == C.library_space(lib, "sorted").enumerate_products()
    with pytest.raises(ValueError, match="same set"):
        a.reordered(lib[:-1])
    with pytest.raises(ValueError, match="order must be one of"):
        C.library_space(lib, "reverse")


def test_experiment_orders_and_head_to_head(monkeypatch):
    "Two orders at a tiny budget: the first at the top level, the second under its name; the ratios by hand."
    monkeypatch.setitem(C.SCALE_CONFIG, "fast", dict(n_blocks=12, n_rollouts=6, exhaustive=False))
    r = C.experiment("fast", 2)
    assert r["config"]["orders"] == ["class", "replicate"] and "replicate" in r
    for res in (r, r["replicate"]):
        M = res["methods"]
        for key, metric in (("hv", "hypervolume"), ("spread", "spread"), ("diversity", "diversity")):
            assert res[f"{key}_pareto_over_scalarize"] == M["pareto"][metric] / M["scalarize"][metric]
            assert res[f"{key}_random_over_scalarize"] == M["random"][metric] / M["scalarize"][metric]
            assert res[f"{key}_ratio_pareto"] == M["pareto"][metric] / M["random"][metric]
    assert r["root_blocks"] != r["replicate"]["root_blocks"] and set(r["root_blocks"]) == set(r["replicate"]["root_blocks"])
    # the class-order results do not depend on which other orders run
    r1 = C.experiment("fast", 2, orders=("class",))
    assert "replicate" not in r1 and r1["hv_ratio_pareto"] == r["hv_ratio_pareto"]
    assert r1["spread_ratio_scalarize"] == r["spread_ratio_scalarize"]
    with pytest.raises(ValueError, match="orders must be"):
        C.experiment("fast", 2, orders=())
    with pytest.raises(ValueError, match="orders must be"):
        C.experiment("fast", 2, orders="class")
