"""ba: bundle adjustment, the reprojection errors of p observations (camera, point, weight,
feature) and the weight errors, and their sparse Jacobian (GradBench's ba eval, ADBench's
formulation). GradBench sends one camera, point, weight and feature and asks the tool to
replicate them (n cameras, m points, p observations); the work is done for all p.

Written per observation: ``reproj_err`` of one observation is recorded once and replayed over
the p observations with ``tapegrad.func.vmap``; the Jacobian's two rows per observation come
from ``vmap(grad)`` of each row.
"""
import numpy as np
import tapegrad as tg
import tapegrad.func as tf

from . import Function

N_CAM = 11                      # rotation (3), centre (3), focal length, principal point (2),
ROT, CENTER, FOCAL, X0, RAD = 0, 3, 6, 7, 9     # radial distortion (2)


def _cross(a, b):
    return tg.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def rodrigues_rotate_point(rot, X):
    sqtheta = (rot ** 2).sum()
    if sqtheta != 0.0:
        theta = tg.sqrt(sqtheta)
        costheta, sintheta = tg.cos(theta), tg.sin(theta)
        w = rot / theta
        tmp = (w * X).sum() * (1.0 - costheta)
        return X * costheta + _cross(w, X) * sintheta + w * tmp
    return X + _cross(rot, X)


def radial_distort(rad, proj):
    rsq = (proj ** 2).sum()
    return proj * (1.0 + rad[0] * rsq + rad[1] * rsq * rsq)


def project(cam, X):
    Xcam = rodrigues_rotate_point(cam[ROT:ROT + 3], X - cam[CENTER:CENTER + 3])
    distorted = radial_distort(cam[RAD:RAD + 2], Xcam[0:2] / Xcam[2])
    return distorted * cam[FOCAL] + cam[X0:X0 + 2]


def reproj_err(cam, X, w, feat):
    return w * (project(cam, X) - feat)


def _row(r):
    def row(cam, X, w, feat):
        return reproj_err(cam, X, w, feat)[r]
    row.__name__ = "reproj_err_%d" % r
    return row


reproj_errs = tf.vmap(reproj_err)
# d row_r / d (cam, X, w) of every observation: one recording per row, replayed over all
reproj_rows = [tf.vmap(tf.grad(_row(r), argnums=(0, 1, 2))) for r in (0, 1)]


def w_err(w):
    return 1.0 - w * w


w_err_grads = tf.vmap(tf.grad(w_err))


class Prepared:
    def __init__(self, inp):
        n, m, p = int(inp["n"]), int(inp["m"]), int(inp["p"])
        self.n, self.m, self.p = n, m, p
        self.cams = np.tile(np.asarray(inp["cam"], dtype=np.float64), (n, 1))
        self.X = np.tile(np.asarray(inp["x"], dtype=np.float64), (m, 1))
        self.w = tg.from_numpy(np.full(p, float(inp["w"])))
        self.feats = tg.from_numpy(np.tile(np.asarray(inp["feat"], dtype=np.float64), (p, 1)))
        obs = np.arange(p)
        self.cam_idx, self.pt_idx = obs % n, obs % m


def _gathered(q):
    """Each observation's camera and point (the gather is part of the timed work)."""
    return tg.from_numpy(q.cams[q.cam_idx]), tg.from_numpy(q.X[q.pt_idx])


def objective(q):
    cams, X = _gathered(q)
    return reproj_errs(cams, X, q.w, q.feats).reshape(-1), w_err(q.w)


def jacobian(q):
    """The Jacobian in ADBench's compressed-row layout (``BASparseMat``): 2p rows of 15
    entries (camera, point, weight), then p rows of one (the weight error)."""
    n, m, p = q.n, q.m, q.p
    cams, X = _gathered(q)
    vals = np.empty((p, 2, N_CAM + 4))
    for r, rows in enumerate(reproj_rows):
        dcam, dX, dw = rows(cams, X, q.w, q.feats)
        vals[:, r, :N_CAM] = dcam.numpy()
        vals[:, r, N_CAM:N_CAM + 3] = dX.numpy()
        vals[:, r, N_CAM + 3] = dw.numpy()
    dw_err = w_err_grads(q.w).numpy()
    obs = np.arange(p)
    cols = np.empty((p, 2, N_CAM + 4), dtype=np.int64)
    cols[:, :, :N_CAM] = (N_CAM * q.cam_idx)[:, None, None] + np.arange(N_CAM)
    cols[:, :, N_CAM:N_CAM + 3] = (N_CAM * n + 3 * q.pt_idx)[:, None, None] + np.arange(3)
    cols[:, :, N_CAM + 3] = (N_CAM * n + 3 * m + obs)[:, None]
    rows = np.concatenate([[0], (N_CAM + 4) * np.arange(1, 2 * p + 1),
                           2 * p * (N_CAM + 4) + np.arange(1, p + 1)])
    return (rows, np.concatenate([cols.reshape(-1), N_CAM * n + 3 * m + obs]),
            np.concatenate([vals.reshape(-1), dw_err]))


def _objective_output(res):
    r, w = res[0].numpy(), res[1].numpy()
    return {"reproj_error": {"elements": r[:2].tolist(), "repeated": len(r) // 2},
            "w_err": {"element": float(w[0]), "repeated": len(w)}}


def _jacobian_output(res):
    rows, cols, vals = res

    def dedup(a, conv):
        return [conv(v) for v in a[:30]] + [conv(a[-1])]
    return {"rows": dedup(rows, int), "cols": dedup(cols, int), "vals": dedup(vals, float)}


FUNCTIONS = {
    "objective": Function(objective, Prepared, _objective_output),
    "jacobian": Function(jacobian, Prepared, _jacobian_output),
}
