"""The peptune chapter beyond its notebook: the peptide chemistry against rdkit, the tokeniser and bond masks, the
authors' validity rule, SUBS and the masking schedules, the reverse step, the two archive and selection rules against
brute force, MCTG's bookkeeping (forwards, backpropagation, the front), best-of-N's budget, and bad input. Tiny models
only; the experiment itself runs in tests/test_chapters.py and the notebook."""
import itertools

import numpy as np
import pytest
import torch
from rdkit import Chem

from fuzzutil import BAD_NUMBERS, HUGE_SIZES, refuses_each
from icml25nb.generative import peptune as P

NOT_NONE = tuple(b for b in BAD_NUMBERS if b is not None)  # None is the default of the optional arguments


@pytest.fixture(scope="module")
def tiny():
    smi, seqs = P.make_corpus(400, seed=0)
    vocab = P.PeptideVocab.from_corpus(smi, 100)
    torch.manual_seed(0)
    model = P.MDLM(vocab, 24, 16, 1, 2)
    return smi, seqs, vocab, model


def test_peptide_smiles_is_rdkits_peptide():
    for s in ["G", "GLFDK", "ACDEFGHIKLMNPQRSTVWY", "PPGP"]:
        assert Chem.CanonSmiles(P.peptide_smiles(s)) == Chem.MolToSmiles(Chem.MolFromSequence(s))
    # D-alanine is the enantiomer of L-alanine in the chain; Aib has no stereocentre
    la, da = Chem.MolFromSmiles(P.peptide_smiles(["A", "G"])), Chem.MolFromSmiles(P.peptide_smiles(["dA", "G"]))
    assert Chem.MolToSmiles(la) != Chem.MolToSmiles(da)
    assert Chem.MolToSmiles(la, isomericSmiles=False) == Chem.MolToSmiles(da, isomericSmiles=False)
    aib = Chem.MolFromSmiles(P.peptide_smiles(["Aib", "G"]))
    assert Chem.FindMolChiralCenters(aib, includeUnassigned=True) == []


def test_corpus_is_valid_reproducible_and_uses_its_alphabet():
    smi, seqs = P.make_corpus(300, seed=3)
    assert (smi, seqs) == P.make_corpus(300, seed=3) and smi != P.make_corpus(300, seed=4)[0]
    assert all(P.is_valid_peptide(s) and P.is_valid_peptide(s, "backbone") for s in smi)
    assert {r for q in seqs for r in q} <= set(P.DESIGN_ALPHABET)
    assert all(4 <= len(q) <= 6 for q in seqs)
    frac = np.mean([r in P.NON_NATURAL for q in seqs for r in q])
    assert 0.08 < frac < 0.22  # p_non_natural = 0.15
    only = P.make_corpus(50, residues=["G", "A"], p_non_natural=0.0, seed=0)[1]
    assert {r for q in only for r in q} <= {"G", "A"}


def test_tokeniser_round_trips_and_merges(tiny):
    smi, _, vocab, _ = tiny
    ids = vocab.encode(smi, 24)
    assert vocab.decode(ids) == smi
    assert all("".join(vocab.tokens(s)) == s for s in smi[:50])
    assert (ids != vocab.pad_id).sum(1).float().mean() < 0.5 * np.mean([len(P.smiles_tokens(s)) for s in smi])
    assert vocab.itos[:3] == [P.PAD, P.MASK, P.UNK]
    # a pre-token the corpus never had is [UNK]
    assert vocab.unk_id in vocab.encode(["Br" + smi[0]], 30)[0].tolist()


def test_bond_mask_marks_the_amide_tokens(tiny):
    smi, _, vocab, _ = tiny
    s = P.peptide_smiles("GAG")  # NCC(=O)N[C@@H](C)C(=O)NCC(=O)O
    spans = P.bond_spans(s)
    assert [s[a:b] for a, b in spans] == ["NC(=O)", "C(=O)N"] or all("C(=O)N" in s[a:b] or "NC(=O)" in s[a:b]
                                                                      for a, b in spans)
    assert len(spans) == 2  # two peptide bonds in a tripeptide
    mask = vocab.bond_mask(smi[:20], 24)
    for row, s in zip(mask, smi[:20]):
        toks, pos = vocab.tokens(s), 0
        for j, t in enumerate(toks):
            covered = any(pos < b and pos + len(t) > a for a, b in P.bond_spans(s))
            assert bool(row[j]) == covered
            pos += len(t)
        assert not row[len(toks):].any()


def test_validity_rules():
    # the authors' rule is lenient: any amide with an N-H or an N-methyl amide passes
    assert P.is_valid_peptide("CC(=O)NC") and P.is_valid_peptide("CC(=O)N(C)C")
    assert not P.is_valid_peptide("CCO") and not P.is_valid_peptide("CC(=O)O") and not P.is_valid_peptide("")
    assert not P.is_valid_peptide("N[C@@H](C")  # does not parse
    # the backbone rule needs two consecutive residues
    assert not P.is_valid_peptide("CC(=O)NC", "backbone")
    assert P.is_valid_peptide(P.peptide_smiles("GA"), "backbone")


def test_net_charge_and_objectives():
    q = lambda s: P.net_charge(Chem.MolFromSmiles(P.peptide_smiles(s)))
    assert q("KKK") == pytest.approx(2.9, abs=0.15)  # three lysines, the termini cancel
    assert q("DDE") == pytest.approx(-3.0, abs=0.15)
    assert q("GGG") == pytest.approx(0.0, abs=0.1)
    assert q("GGG") > P.net_charge(Chem.MolFromSmiles(P.peptide_smiles("GGG")), pH=9.0)
    Y = P.peptide_objectives([P.peptide_smiles("GLFDK"), "not a smiles", P.peptide_smiles("KWKRRW")])
    assert Y.shape == (3, 3) and np.isnan(Y[1]).all() and np.isfinite(Y[[0, 2]]).all()
    assert (Y[[0, 2]] <= 0).all()  # all three are distances or negated sizes
    assert Y[2, 1] < Y[0, 1]  # KWKRRW has the larger polar surface


def test_subs_copies_and_never_predicts_mask(tiny):
    smi, _, vocab, model = tiny
    x0 = vocab.encode(smi[:32], 24)
    z, t, masked = model.noisy(x0, vocab.bond_mask(smi[:32], 24), torch.Generator().manual_seed(1))
    assert (z[masked] == vocab.mask_id).all() and (z[~masked] == x0[~masked]).all()
    logp = model(z)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(z.shape))
    assert (logp.argmax(-1)[~masked] == x0[~masked]).all() and (logp[~masked].exp().max(-1).values == 1).all()
    assert logp[..., vocab.mask_id].exp().max() == 0


def test_masking_rates_and_elbo_weights():
    t = torch.full((40000,), 0.6)
    bond = torch.zeros(40000, 2, dtype=torch.bool)
    bond[:, 1] = True
    rate = (torch.rand(40000, 2, generator=torch.Generator().manual_seed(0)) < P.mask_probability(t, bond)).float().mean(0)
    assert abs(rate[0] - 0.999 * 0.6) < 0.01 and abs(rate[1] - 0.999 * 0.216) < 0.01
    # the weight is -alpha'(t) / (1 - alpha(t)), by finite differences of the mask probability
    for tt in (0.1, 0.5, 0.9):
        for b in (False, True):
            m = lambda u: float(P.mask_probability(torch.tensor([u], dtype=torch.float64), torch.tensor([[b]]))[0, 0])
            w = (m(tt + 1e-6) - m(tt - 1e-6)) / 2e-6 / m(tt)
            assert float(P.elbo_weight(torch.tensor([tt]), torch.tensor([[b]]))[0, 0]) == pytest.approx(w, rel=1e-3)


def test_loss_is_a_positive_bound_that_training_lowers(tiny):
    smi, _, vocab, _ = tiny
    torch.manual_seed(1)
    m = P.MDLM(vocab, 24, 32, 1, 2)
    x = vocab.encode(smi[300:], 24)
    before = P.elbo_nats(m, x, seed=0)
    hist = P.train_mdlm(m, smi[:300], steps=60, batch=32, lr=3e-3, invalid_every=20, seed=0)
    after = P.elbo_nats(m, x, seed=0)
    assert len(hist) == 60 and all(np.isfinite(hist)) and 0 < after < before
    assert P.unigram_nats(vocab.encode(smi[:300], 24), x, len(vocab)) > 0


def test_invalid_token_loss_only_on_invalid_rows(tiny):
    smi, _, vocab, model = tiny
    x = vocab.encode(smi[:4], 24)
    logp = model(x)  # nothing masked: the argmax decodes the corpus peptides, all valid
    assert P.invalid_token_loss(model, logp).abs().sum() == 0
    z = torch.full_like(x, vocab.mask_id)
    lp = model(z)
    bad = [not P.is_valid_peptide(s) for s in vocab.decode(lp.argmax(-1))]
    loss = P.invalid_token_loss(model, lp)
    for row, b in zip(loss, bad):
        assert (row > 0).all() if b else (row == 0).all()


def test_reverse_step_reveals_and_keeps(tiny):
    _, _, vocab, model = tiny
    g = torch.Generator().manual_seed(0)
    z = torch.full((64, 24), vocab.mask_id)
    z1 = model.reverse_step(z, 1.0, 0.75, g)
    frac = (z1 != vocab.mask_id).float().mean()
    assert 0.2 < frac < 0.3  # (t - s) / t = 0.25
    z2 = model.reverse_step(z1, 0.75, 0.5, g)
    kept = z1 != vocab.mask_id
    assert (z2[kept] == z1[kept]).all()
    assert (model.reverse_step(z2, 0.5, 0.0, g) != vocab.mask_id).all()  # s = 0 reveals everything
    kids = model.reverse_step(z[:1], 1.0, 0.5, g, n_children=8)
    assert kids.shape == (8, 24) and len({tuple(k.tolist()) for k in kids}) > 1
    before = model.forwards
    out = model.sample(5, 7, generator=g)
    assert (out != vocab.mask_id).all() and model.forwards - before == 5 * 7


def _brute_front(Y):
    return [i for i in range(len(Y)) if not any(P.dominates(Y[j], Y[i]) for j in range(len(Y)) if j != i)]


def test_archives_against_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(30):
        K = int(rng.integers(1, 4))
        Y = rng.integers(0, 4, size=(60, K)).astype(float) if trial % 2 else rng.random((60, K))
        paper, code = P.ParetoArchive("paper"), P.ParetoArchive("code", capacity=10)
        for i, y in enumerate(Y):
            for a in (paper, code):
                r = a.reward(y)
                expect = np.ones(K) if not a.Y else np.mean([[y[k] >= f[k] for k in range(K)] for f in a.Y], 0)
                assert np.array_equal(r, expect)
            paper.insert(y, i)
            code.insert(y, i)
            # the paper's archive is the non-dominated set of everything so far, one per distinct vector
            front = {tuple(Y[j]) for j in _brute_front(Y[: i + 1])}
            assert {tuple(v) for v in paper.Y} == front and len(paper.Y) == len(front)
        # the code's archive never falls below its capacity once reached: deletions happen only above it
        assert len(code.items) >= min(10, len(Y))
    # continuous vectors: the code's archive keeps exactly the first `capacity` once they are many and incomparable
    code = P.ParetoArchive("code", capacity=5)
    for i, y in enumerate(np.array([[1, 0], [0, 1], [0.5, 0.5], [0.2, 0.7], [0.7, 0.2], [0.1, 0.1], [0.9, 0.05]])):
        code.insert(y, i)
    assert code.items == [0, 1, 2, 3, 4]  # [0.1, 0.1] and [0.9, 0.05] are refused: the archive is full


def test_selection_rules():
    rng = np.random.default_rng(1)
    for _ in range(100):
        U = rng.random((int(rng.integers(1, 30)), int(rng.integers(1, 4))))
        assert P.pareto_children(U, "paper") == _brute_front(U)
        code = P.pareto_children(U, "code")
        assert set(code) <= set(_brute_front(U)) and len(code) >= 1
    # incomparable children: the code keeps only the first (nobody dominates it, nobody joins)
    assert P.pareto_children(np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), "code") == [0]
    assert P.pareto_children(np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), "paper") == [0, 1, 2]
    assert P.pareto_children(np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]), "code") == [1, 2]


def test_mctg_bookkeeping(tiny):
    _, _, vocab, model = tiny
    steps, M = 6, 4
    before = model.forwards
    mc = P.MCTG(model, num_children=M, num_iter=3, steps=steps, seed=0, invalid_penalty=0.5)
    front_smiles, front_Y = mc.run()
    # forwards: one parent call plus M per remaining step, per iteration
    depths = [d for d in mc.depth[1:]]
    expanded = sorted({mc.parent[i] for i in range(1, len(mc.z))})
    assert mc.forwards == sum(1 + M * (steps - mc.depth[p] - 1) for p in expanded for _ in range(
        sum(1 for c in range(1, len(mc.z)) if mc.parent[c] == p) // M))
    assert mc.forwards == model.forwards - before
    assert len(mc.valid_fraction) == 3 and len(mc.rollouts) == 3 * M and len(depths) == 3 * M
    # backpropagation: the root's reward sum is the sum of what every iteration backed up
    n_inv = [round((1 - v) * M) for v in mc.valid_fraction]
    assert mc.visits[0] == 1 + 3
    assert front_Y.shape[0] == len(front_smiles)
    if len(front_Y):
        assert P.nondominated_mask(front_Y, maximise=True).all()
    assert all(P.is_valid_peptide(s) for s in front_smiles)
    assert sum(n_inv) == sum(not v for v in mc.rollout_valid)


def test_mctg_backs_up_the_penalty_when_everything_is_invalid(tiny):
    _, _, vocab, model = tiny
    never = lambda smiles: np.zeros((len(smiles), 2))
    mc = P.MCTG(model, never, num_children=3, num_iter=2, steps=4, seed=0, invalid_penalty=0.5, validity="backbone")
    # the untrained model's 4-step samples fail the backbone rule: every rollout is invalid, so only the penalty is
    # backed up
    mc.run()
    assert len(mc.rollout_valid) == 6 and not any(mc.rollout_valid)
    assert np.allclose(mc.total[0], [-1.0, -1.0])  # two iterations of -0.5 x (3 / 3)
    assert mc.pen[0] == 1.0 and mc.front()[1].shape == (0, 2)


def test_best_of_n_spends_n_times_steps(tiny):
    _, _, vocab, model = tiny
    out = P.best_of_n(model, n=10, steps=5, seed=0)
    assert out["forwards"] == 50 and len(out["smiles"]) == 10 and out["Y"].shape == (10, 3)
    assert out["smiles"] == P.best_of_n(model, n=10, steps=5, seed=0)["smiles"]
    assert all(out["valid"][out["smiles"].index(s)] for s in out["front"])


def test_front_hypervolume_ignores_points_beyond_the_reference():
    ref = np.array([0.0, 0.0, 0.0])
    assert P.front_hypervolume(np.array([[1.0, 1.0, 1.0]]), ref) == pytest.approx(1.0)
    assert P.front_hypervolume(np.array([[1.0, 1.0, 1.0], [2.0, -1.0, 5.0]]), ref) == pytest.approx(1.0)
    assert P.front_hypervolume(np.zeros((0, 3)), ref) == 0.0


def test_bad_input_is_refused(tiny):
    smi, _, vocab, model = tiny
    refuses_each(P.peptide_smiles, dict(sequence="GA"), dict(sequence=["GXA", "", [], None]))
    refuses_each(P.make_corpus, dict(n=5), dict(n=[0, *BAD_NUMBERS, *HUGE_SIZES], length=[(5, 4), (0, 3), ("a", 2)],
                                                 p_non_natural=[-0.1, 1.5, *BAD_NUMBERS], residues=[["X"], ["Aib"]],
                                                 seed=[-1, 1.5]))
    refuses_each(P.is_valid_peptide, dict(smiles="CC(=O)NC"), dict(smiles=[3, None], rule=["strict", 1]))
    refuses_each(P.peptide_objectives, dict(smiles=["CCO"]), dict(smiles=["CCO", [3]]))
    refuses_each(P.net_charge, dict(mol=Chem.MolFromSmiles("CCO")), dict(mol=["CCO", None], pH=[-1.0, 15.0, *BAD_NUMBERS]))
    refuses_each(P.PeptideVocab.from_corpus, dict(smiles=smi[:10]), dict(smiles=["CCO", [], [3]], vocab_size=[0, *BAD_NUMBERS]))
    refuses_each(vocab.encode, dict(smiles=smi[:2], length=24), dict(length=[0, 3, *BAD_NUMBERS], smiles=["CCO"]))
    refuses_each(P.MDLM, dict(vocab=vocab), dict(vocab=["v", None], context=[0, *BAD_NUMBERS], d_model=[0, *BAD_NUMBERS],
                                                 n_layers=[0, *BAD_NUMBERS], n_heads=[0, 3, *BAD_NUMBERS]),
                 name_in_message=False)
    x = vocab.encode(smi[:2], 24)
    refuses_each(model.loss, dict(x0=x), dict(x0=[x.float(), x[0], torch.full((2, 30), 3)],
                                              bond=[torch.zeros(2, 3, dtype=torch.bool), x]), name_in_message=False)
    refuses_each(model.reverse_step, dict(z=x, t=1.0, s=0.5), dict(t=[0.3, 1.5, *BAD_NUMBERS[:3]], s=[-0.1, 1.0],
                                                                   n_children=[0, *NOT_NONE]), name_in_message=False)
    refuses_each(model.sample, dict(n=2, steps=3), dict(n=[0, *BAD_NUMBERS], steps=[0, *BAD_NUMBERS],
                                                      length=[0, 25, *NOT_NONE]))
    refuses_each(P.train_mdlm, dict(model=model, smiles=smi[:8], steps=1, batch=2),
                 dict(model=["m", None], steps=[0, *BAD_NUMBERS], batch=[0, *BAD_NUMBERS], lr=[0.0, *BAD_NUMBERS],
                      invalid_every=[-1, *BAD_NUMBERS], invalid_rule=["x"], smiles=["CCO"]))
    refuses_each(P.MCTG, dict(mdlm=model), dict(mdlm=["m", None], objectives=[3], num_children=[0, *BAD_NUMBERS],
                                                num_iter=[-1, *BAD_NUMBERS], invalid_penalty=[-1.0, *BAD_NUMBERS],
                                                steps=[0, *BAD_NUMBERS], length=[0, 25], front_rule=["x"],
                                                selection=["x"], capacity=[0], validity=["x"], seed=[-1]))
    refuses_each(P.best_of_n, dict(mdlm=model, n=2, steps=2), dict(mdlm=["m"], objectives=[3], n=[0, *BAD_NUMBERS],
                                                                   steps=[0, *BAD_NUMBERS], validity=["x"], seed=[-1]))
    refuses_each(P.ParetoArchive, dict(), dict(rule=["x"], capacity=[0, *BAD_NUMBERS]))
    refuses_each(P.ParetoArchive().insert, dict(y=[1.0, 2.0]), dict(y=[[np.nan, 1.0], "y", [[1.0]]]))
    refuses_each(P.pareto_children, dict(U=np.ones((2, 2))), dict(U=[np.ones(3), np.zeros((0, 2)), [[np.nan]]],
                                                                  rule=["x"]))
    refuses_each(P.unigram_nats, dict(train=x, held=x, vocab_size=len(vocab)),
                 dict(train=[x.float(), torch.zeros(0, dtype=torch.long)], held=[x + 1000], vocab_size=[0, *BAD_NUMBERS]))
    with pytest.raises(ValueError, match="scale"):
        P.experiment("huge")


def test_mctg_budget_random_selection_and_penalty_bookkeeping(tiny):
    _, _, vocab, model = tiny
    budget = 60
    mc = P.MCTG(model, num_children=3, num_iter=50, steps=6, seed=0, selection="random")
    mc.run(max_forwards=budget)
    # stops before the first iteration that would exceed the budget: the next one, from any node, costs more than left
    assert 0 < mc.forwards <= budget and mc.forwards + 1 > budget - 3 * 5
    assert mc.penalty_changed == 0  # random selection never looks at the rewards
    assert len(mc.expanded) == len(mc.valid_fraction)
    # the penalty backed up into every node is the invalid fraction x penalty summed over the iterations below it
    mc = P.MCTG(model, num_children=3, num_iter=4, steps=6, seed=1, invalid_penalty=0.5)
    mc.run()
    inv = [0.5 * (1 - v) for v in mc.valid_fraction]
    assert mc.pen[0] == pytest.approx(sum(inv))
    for node, expect in zip(mc.expanded, inv):
        assert mc.pen[node] >= expect - 1e-12
    assert np.isnan(P.MCTG(model, num_children=2, steps=3).chain_fraction)
