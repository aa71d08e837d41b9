"""supervised/p2p: the pieces of P2P against their definitions, the training and selection rules on tiny inputs,
and bad input named in the errors (the chapter's experiment runs in tests/test_chapters.py)."""
import numpy as np
import pytest
import torch

from icml25nb.kernels import segpool as SP
from icml25nb.supervised import p2p as P


@pytest.fixture(scope="module")
def data():
    d = P.make_shapes_dataset(12, size=24, seed=3)
    return d, P.superpixels(d["images"], 40)


def test_dataset_counts_and_masks(data):
    d, _ = data
    assert d["images"].dtype == np.float32 and d["labels"].min() >= 0 and d["labels"].max() < 4
    assert (d["n_distractors"] <= 3).all() and (d["n_evidence"] <= 2).all()
    # an image with more evidence copies has at least as many evidence pixels outside the large shape
    extra = (d["masks"] & ~d["object_masks"]).sum((1, 2))
    assert (extra[d["n_evidence"] == 0] == 0).all() and (extra[d["n_evidence"] > 0] > 0).all()
    assert not np.array_equal(P.make_shapes_dataset(12, size=24, seed=4)["images"], d["images"])


def test_region_pool_and_broadcast_match_loops(data):
    d, seg = data
    v = np.random.default_rng(1).normal(size=(12, 2, 24, 24))
    p = P.region_pool(v, seg)
    for b in (0, 5):
        for s in np.unique(seg[b]):
            assert np.allclose(p[b, :, s], v[b][:, seg[b] == s].mean(1))
    y = P.broadcast(p, seg)
    assert np.array_equal(y[3, 1], p[3, 1][seg[3]])


def test_torch_path_gradients_are_the_transposes(data):
    _, seg = data
    x = torch.randn(12, 24, 24, dtype=torch.float64, requires_grad=True)
    S = int(seg.max()) + 1
    assert torch.autograd.gradcheck(lambda t: P.region_pool(t, seg, S), (x,), eps=1e-6, atol=1e-6)
    q = torch.randn(12, S, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: P.broadcast(t, seg), (q,), eps=1e-6, atol=1e-6)


def test_grid_and_pixel_regions():
    x = np.zeros((2, 3, 24, 24))
    g = P.superpixels(x, 16, method="grid")
    assert len(np.unique(g[0])) == 16 and np.bincount(g[0].ravel()).tolist() == [36] * 16
    px = P.superpixels(x, method="pixel")
    assert np.array_equal(px[1].ravel(), np.arange(576))


def test_budget_penalty_is_one_sided():
    cnt = torch.ones(3, 4)
    probs = torch.tensor([[0.1] * 4, [0.5] * 4, [0.9] * 4])
    pen, a = P.budget_penalty(probs, cnt, torch.tensor([0.5, 0.5, 0.5]))
    assert torch.allclose(a, torch.tensor([0.1, 0.5, 0.9]))
    per = -torch.log(torch.tensor(0.5 + 1e-6) - 0.4) + torch.log(torch.tensor(0.5 + 1e-6))
    assert abs(float(pen) - float(per) / 3) < 1e-5  # only the image above its budget pays


def test_select_at_area_covers_at_least_the_area():
    rng = np.random.default_rng(0)
    s, c = rng.random((50, 9)), rng.integers(1, 10, (50, 9)).astype(float)
    area = rng.random(50)
    m = P.select_at_area(s, c, area)
    cov = (m * c).sum(1) / c.sum(1)
    assert (cov >= area - 1e-12).all()
    # dropping the lowest-ranked selected region falls below the area: no region more than needed
    for i in range(50):
        if m[i].any():
            low = np.where(m[i])[0][np.argmin(s[i][m[i]])]
            assert (cov[i] - c[i, low] / c[i].sum()) < area[i]


def test_dynamic_select_stops_at_the_first_certain_tau(data):
    d, seg = data
    torch.manual_seed(0)
    m = P.P2PModel(width=4)
    x = torch.from_numpy(d["images"])
    r = P.dynamic_select(m, x, seg, threshold=0.26)  # nearly any prediction is this certain
    assert np.allclose(r["tau"], 0.05) and r["certain"].all()
    r = P.dynamic_select(m, x, seg, threshold=1.0)  # never certain: tau climbs to 1
    assert np.allclose(r["tau"], 1.0) and not r["certain"].any()
    f = P.P2PModel(width=4, dynamic=False)
    assert np.allclose(P.dynamic_select(f, x, seg)["tau"], 0.2)


def test_pixel_selector_ignores_the_segments(data):
    d, seg = data
    torch.manual_seed(0)
    m = P.PixelSelector(width=4)
    x = torch.from_numpy(d["images"])
    a = m(x, seg, torch.full((12,), 0.5), hard=True)[1]
    b = m(x, np.zeros_like(seg), torch.full((12,), 0.5), hard=True)[1]
    assert a.shape == (12, 576) and torch.equal(a, b)


def test_training_lowers_the_loss(data):
    d, seg = data
    torch.manual_seed(0)
    m = P.P2PModel(width=4)
    h = P.fit_p2p(m, d["images"], seg, d["labels"], steps=40, batch=12, seed=0)
    assert np.mean(h["ce"][-10:]) < np.mean(h["ce"][:10])


def test_object_precision_and_fidelity(data):
    d, seg = data
    t = d["masks"]
    assert np.allclose(P.object_precision(t, t)[t.any((1, 2))], 1.0)
    assert np.allclose(P.object_precision(~t, t), 0.0)
    torch.manual_seed(0)
    m = P.P2PModel(width=4)
    f = P.insertion_deletion(m, d["images"], t.astype(float), labels=d["labels"], fractions=[0, 0.25, 1])
    assert len(f["insertion"]) == 3 and 0 <= f["insertion_auc"] <= 1 and f["insertion"][2] == pytest.approx(f["deletion"][0])


@pytest.mark.parametrize("call, match", [
    (lambda d, s: P.make_shapes_dataset(-1), "n"),
    (lambda d, s: P.make_shapes_dataset(4, n_distractors=-1), "n_distractors"),
    (lambda d, s: P.superpixels("images"), "images"),
    (lambda d, s: P.superpixels(np.full((2, 3, 8, 8), np.nan)), "finite"),
    (lambda d, s: P.superpixels(d["images"], 0), "n_segments"),
    (lambda d, s: P.region_pool(np.zeros((12, 5, 5)), s), "values"),
    (lambda d, s: P.region_pool(torch.zeros(12, 24, 24), s.astype(float)), "integer"),
    (lambda d, s: P.broadcast(np.zeros((12, 2)), s), "segments"),
    (lambda d, s: P.object_precision(np.zeros((2, 3, 3)), np.zeros((2, 3, 4))), "same shape"),
    (lambda d, s: P.select_at_area(np.zeros((2, 3)), np.ones((2, 3)), 2.0), "area"),
    (lambda d, s: P.dynamic_select(P.P2PModel(width=4), d["images"][:, :2], s), "x must be images"),
    (lambda d, s: P.fit_p2p(P.P2PModel(width=4), d["images"], s, d["labels"], steps=0), "steps"),
    (lambda d, s: P.insertion_deletion(P.P2PModel(width=4), d["images"], d["masks"], fractions=[0.5, 0.2]), "fractions"),
    (lambda d, s: P.P2PModel(reg_threshold=1.5), "reg_threshold"),
    (lambda d, s: P.experiment("huge"), "scale"),
])
def test_bad_input_is_named(data, call, match):
    d, seg = data
    with pytest.raises((TypeError, ValueError), match=match):
        call(d, seg)


def test_plots_run_headless_from_the_module_alone():
    import matplotlib
    matplotlib.use("Agg")
    ex = dict(images=np.zeros((2, 3, 24, 24), np.uint8), true=np.zeros((2, 24, 24), bool), labels=[0, 1],
              masks={k: np.zeros((2, 24, 24), bool) for k in P.VARIANTS})
    res = dict(examples=ex, precision=dict(p2p=0.5, pixel=0.4, grid=0.3, random=0.1), mean_area=0.2,
               regions_by_evidence={"0": 2.0, "1": 3.0}, regions_by_evidence_fixed={"0": 2.0, "1": 2.0},
               spearman_evidence=0.2, spearman_evidence_fixed=0.1)
    assert set(P.plots(res)) == {"masks", "precision_and_regions"}


def test_random_mask_evaluator_and_covariance_training(data):
    d, seg = data
    torch.manual_seed(0)
    clf = P.Classifier(4, 4)
    before = [p.detach().clone() for p in clf.parameters()]
    P.fit_random_mask_evaluator(clf, d["images"], seg, d["labels"], steps=3, batch=4)
    assert any(not torch.equal(a, b) for a, b in zip(before, clf.parameters()))
    m = P.P2PModel(width=4, use_cov=True)
    h = P.fit_p2p(m, d["images"], seg, d["labels"], steps=3, batch=4)
    assert np.isfinite(h["loss"]).all() and m.last_cov.shape[-1] == m.last_cov.shape[-2]
