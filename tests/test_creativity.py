"""The creativity chapter's machines beyond its notebook: zero padding, bad input, calibration on a tiny case."""
import numpy as np
import pytest
import torch

from icml25nb.generative import creativity as C


def _brute_els(x, t, train, k, padding):
    a, b = C.noise_schedule(t)
    P, Qx = C.image_patches(train, k, padding), C.image_patches(x, k, padding)
    vals = train.reshape(-1)
    out = np.empty(Qx.shape[:2])
    for i in range(len(x)):
        for p in range(Qx.shape[1]):
            lg = -((Qx[i, p][None] - a * P.reshape(-1, k * k)) ** 2).sum(1) / (2 * b * b)
            w = np.exp(lg - lg.max())
            out[i, p] = (w / w.sum()) @ vals
    return out.reshape(x.shape)


@pytest.mark.parametrize("padding,k", [("zeros", 3), ("zeros", 5), ("circular", 5)])
def test_els_matches_brute_force(padding, k):
    rng = np.random.default_rng(k)
    train, x = rng.uniform(-1, 1, (4, 5, 6)), rng.standard_normal((2, 5, 6))
    np.testing.assert_allclose(C.els_denoiser(x, 0.4, train, k, padding), _brute_els(x, 0.4, train, k, padding),
                               atol=1e-12)


def test_zero_padded_patches_hold_zeros_outside():
    x = np.ones((1, 3, 3))
    p = C.image_patches(x, 3, "zeros").reshape(9, 3, 3)
    assert p[0].sum() == 4 and p[4].sum() == 9  # corner pixel sees 4 image pixels, the centre all 9


def test_local_machine_at_a_single_pixel_patch():
    "k = 1: every pixel is denoised on its own, against the training images' values at that pixel."
    rng = np.random.default_rng(0)
    train, x = rng.uniform(-1, 1, (6, 3, 3)), rng.standard_normal((2, 3, 3))
    a, b = C.noise_schedule(0.5)
    got = C.local_denoiser(x, 0.5, train, 1)
    for i in range(2):
        for r in range(3):
            for c in range(3):
                lg = -(x[i, r, c] - a * train[:, r, c]) ** 2 / (2 * b * b)
                w = np.exp(lg - lg.max())
                assert got[i, r, c] == pytest.approx((w / w.sum()) @ train[:, r, c], abs=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda tr, x: C.els_denoiser(x, 0.5, tr, 2), "odd"),
    (lambda tr, x: C.els_denoiser(x, 0.5, tr, 9), "larger than the image"),
    (lambda tr, x: C.local_denoiser(x, 0.5, tr, 17, "zeros"), "larger than the image"),
    (lambda tr, x: C.els_denoiser(x, 0.5, tr, 3, "reflect"), "padding"),
    (lambda tr, x: C.els_denoiser(x[:, :4], 0.5, tr, 3), "same image shape"),
    (lambda tr, x: C.ideal_denoiser(x[0], 0.5, tr), "images, H, W"),
    (lambda tr, x: C.ideal_denoiser(np.full_like(x, np.nan), 0.5, tr), "finite"),
    (lambda tr, x: C.ideal_denoiser(x, -0.1, tr), "t must"),
    (lambda tr, x: C.ddim_sample(lambda z, t: z, x, steps=0), "steps"),
    (lambda tr, x: C.r2(x, x[:1]), "same shape"),
])
def test_bad_input(call, match):
    tr, x = np.zeros((3, 8, 8)), np.zeros((2, 8, 8))
    with pytest.raises(ValueError, match=match):
        call(tr, x)


def test_calibration_recovers_the_patch_size_of_an_els_machine():
    "Calibrating against the ELS machine itself (k = 3 at every time) must return k = 3 with cosine 1."
    rng = np.random.default_rng(1)
    train, held = rng.uniform(-1, 1, (20, 6, 6)), rng.uniform(-1, 1, (3, 6, 6))
    cal = C.calibrate_patch_size(lambda x, t: C.els_denoiser(x, t, train, 3), held, train, ks=(1, 3, 5), steps=4)
    assert list(cal["k"]) == [3, 3, 3, 3]
    np.testing.assert_allclose(cal["cos"][:, 1], 1.0, atol=1e-12)
    assert set(cal["k_of_t"]) == {1.0, 0.75, 0.5, 0.25}


def test_network_denoiser_inverts_the_noise_prediction():
    "If the network predicted the true noise, x0_hat would be the clean image."
    class Oracle(torch.nn.Module):
        def forward(self, x, t):
            return self.eps
    x0 = np.random.default_rng(2).uniform(-1, 1, (2, 8, 8))
    eps = np.random.default_rng(3).standard_normal((2, 8, 8))
    a, b = C.noise_schedule(0.6)
    m = Oracle()
    m.eps = torch.tensor(eps)
    np.testing.assert_allclose(C.network_denoiser(m)(a * x0 + b * eps, 0.6), x0, atol=1e-5)


def test_train_denoiser_reduces_the_loss():
    train = C.digits_images(0)[:64]
    torch.manual_seed(0)
    model = C.ConvDenoiser(channels=8, n1x1=1)
    losses = C.train_denoiser(model, train, steps=150, batch=32, lr=3e-3, seed=0)
    assert np.mean(losses[-30:]) < 0.8 * np.mean(losses[:10])
    with pytest.raises(ValueError, match="steps"):
        C.train_denoiser(model, train, steps=0)


def test_scheduled_ls_uses_the_patch_size_of_each_time():
    "The LS control machine follows the calibrated k(t) exactly as the ELS machine does."
    rng = np.random.default_rng(3)
    train, x = rng.uniform(-1, 1, (5, 5, 5)), rng.standard_normal((2, 5, 5))
    k_of_t = {0.5: 3, 1.0: 5}
    fn = C.scheduled_ls(train, k_of_t)
    for t, k in k_of_t.items():
        np.testing.assert_array_equal(fn(x, t), C.local_denoiser(x, t, train, k, "circular"))
    assert not np.allclose(fn(x, 0.5), C.scheduled_els(train, k_of_t)(x, 0.5))  # LS is not ELS


def test_calibrating_two_networks_at_once_equals_calibrating_each():
    "The shared calibration reuses the ELS fields; each network's cosines and k(t) are those of its own calibration."
    rng = np.random.default_rng(4)
    train, held = rng.uniform(-1, 1, (12, 6, 6)), rng.uniform(-1, 1, (3, 6, 6))
    fns = {"k3": lambda x, t: C.els_denoiser(x, t, train, 3), "k5": lambda x, t: C.els_denoiser(x, t, train, 5)}
    both = C.calibrate_patch_sizes(fns, held, train, ks=(1, 3, 5), steps=3, seed=2)
    for name, fn in fns.items():
        one = C.calibrate_patch_size(fn, held, train, ks=(1, 3, 5), steps=3, seed=2)
        np.testing.assert_array_equal(both[name]["cos"], one["cos"])
        assert both[name]["k_of_t"] == one["k_of_t"]
    assert list(both["k3"]["k"]) == [3, 3, 3] and list(both["k5"]["k"]) == [5, 5, 5]


def test_dilated_network_is_not_local_on_the_digits():
    "The control network (middle 3x3 dilated by 2): receptive field 9, every output pixel of an 8x8 image sees every input."
    torch.manual_seed(0)
    local, wide = C.ConvDenoiser(channels=8), C.ConvDenoiser(channels=8, dilation=2)
    assert (local.receptive_field, wide.receptive_field) == (7, 9)
    xa = torch.zeros(1, 8, 8)
    xb = xa.clone()
    xb[0, 0, 0] = 1.0
    t = torch.tensor([0.5])
    with torch.no_grad():
        assert (wide(xb, t) - wide(xa, t)).abs().min() > 0
        assert (local(xb, t) - local(xa, t)).abs()[0, 4, 4] == 0  # 4 pixels away (wrapped) is outside 7x7
