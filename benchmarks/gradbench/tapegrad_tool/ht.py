"""ht: hand tracking, the residuals between observed points and a skinned hand model posed by
26 parameters theta, and their Jacobian (GradBench's ht eval, ADBench's formulation; the
"complicated" variant also places each point on a triangle by barycentric coordinates u).

Written per observation: ``residual`` computes one point's 3 residuals from theta and that
point's data (its vertex's base position and bone weights, or its triangle's three). It is
recorded once and replayed over all the points with ``tapegrad.func.vmap``; the Jacobian's
rows come from ``vmap(grad)`` of the residual against a one-hot cotangent, one lane per
(point, row). The model (bone hierarchy and base transforms) is the same for every point:
captured constants of the recording.
"""
import numpy as np
import tapegrad as tg
import tapegrad.func as tf

from . import Function
from ._common import tolist

# Constant bases of the elementary rotations: R = E0 + cos(t) Ec + sin(t) Es.
_BASES = {}
for _axis, (i, j) in (("x", (1, 2)), ("y", (2, 0)), ("z", (0, 1))):
    e0, ec, es = np.eye(3), np.zeros((3, 3)), np.zeros((3, 3))
    e0[i, i] = e0[j, j] = 0.0
    ec[i, i] = ec[j, j] = 1.0
    es[j, i], es[i, j] = 1.0, -1.0
    _BASES[_axis] = tuple(tg.from_numpy(a) for a in (e0, ec, es))


def pose_index(nbones):
    """ADBench's ``to_pose_params`` as indices into theta (-1: the constant 0): row 0 the
    global rotation (angle-axis), row 1 the scale (ones), row 2 the translation, rows 3.. one
    Euler triple (x, z, y order) per bone."""
    idx = -np.ones((nbones + 3, 3), dtype=np.int64)
    idx[0], idx[2] = [0, 1, 2], [3, 4, 5]
    i_theta, row = 6, 5
    for _ in range(5):                      # five fingers of three bones, then a gap
        for i in (1, 2, 3):
            idx[row, 0] = i_theta
            i_theta += 1
            if i == 1:
                idx[row, 1] = i_theta
                i_theta += 1
            row += 1
        row += 1
    return idx


class Model:
    """The hand model's constants (numpy), shared by every observation."""

    def __init__(self, model):
        self.nbones = int(model["bone_count"])
        self.parents = [int(p) for p in model["parents"]]
        self.base_relatives = np.asarray(model["base_relatives"], dtype=np.float64)
        self.inverse_base_absolutes = np.asarray(model["inverse_base_absolutes"], dtype=np.float64)
        self.base_positions = np.asarray(model["base_positions"], dtype=np.float64)[:, :3]
        self.weights = np.asarray(model["weights"], dtype=np.float64)
        self.triangles = np.asarray(model["triangles"], dtype=np.int64)
        self.pose = pose_index(self.nbones)
        # per bone, as tensors (constants of the recordings): the base relative's linear part
        # and translation, the inverse base absolute's linear part and translation
        br, ib = self.base_relatives, self.inverse_base_absolutes
        self.rel = [(tg.from_numpy(br[b, :3, :3].copy()), tg.from_numpy(br[b, :3, 3].copy()))
                    for b in range(self.nbones)]
        self.inv = [(tg.from_numpy(ib[b, :3, :3].copy()), tg.from_numpy(ib[b, :3, 3].copy()))
                    for b in range(self.nbones)]

    def key(self):
        return (self.nbones, tuple(self.parents), self.base_relatives.tobytes(),
                self.inverse_base_absolutes.tobytes())


def _rotation(axis, t):
    e0, ec, es = _BASES[axis]
    return tg.cos(t) * ec + tg.sin(t) * es + e0


def _euler(theta, row):
    """Rz(tz) @ Ry(ty) @ Rx(tx) of one bone (None: the identity, all its angles are 0)."""
    R = None
    for axis, col in (("z", 1), ("y", 2), ("x", 0)):
        k = row[col]
        if k >= 0:
            r = _rotation(axis, theta[int(k)])
            R = r if R is None else R @ r
    return R


def _angle_axis(aa):
    n = tg.sqrt((aa ** 2).sum())
    if n < 0.0001:
        return None
    v = aa / n
    x, y, z = v[0], v[1], v[2]     # not `x, y, z = v`: see README, tapegrad.func bug 3
    s, c = tg.sin(n), tg.cos(n)
    return tg.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s,
                     x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
                     x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]
                    ).reshape(3, 3)


def bone_transforms(theta, m):
    """The skinning transform of every bone: absolute pose times inverse base absolute, as
    (linear 3x3 part, translation) pairs."""
    absolutes, out = [], []
    for b in range(m.nbones):
        A, t = m.rel[b]
        R = _euler(theta, m.pose[3 + b])
        if R is not None:
            A = A @ R
        p = m.parents[b]
        if p >= 0:
            Ap, tp = absolutes[p]
            A, t = Ap @ A, Ap @ t + tp
        absolutes.append((A, t))
        Ai, ti = m.inv[b]
        out.append((A @ Ai, A @ ti + t))
    return out


def _place(theta, m, weights, positions):
    """World positions (k, 3) of k vertices (bone weights (k, nbones), base positions (k, 3)):
    the weighted sum of the bones' transforms of each, then the global rotation and
    translation. (Accumulated bone by bone: a ``stack`` of the bones' transforms records as a
    tree of pairwise concatenations, costlier here.)"""
    local = None
    for b, (A, t) in enumerate(bone_transforms(theta, m)):
        term = weights[:, b:b + 1] * (positions @ A.T + t)
        local = term if local is None else local + term
    R = _angle_axis(theta[0:3])
    world = local if R is None else local @ R.T
    return world + theta[3:6]


def residual_simple(theta, weights, position, point, m):
    return point - _place(theta, m, weights[None], position[None])[0]


def residual_complicated(theta, u, weights, positions, point, m):
    v = _place(theta, m, weights, positions)                   # the triangle's 3 vertices
    return point - (u[0] * v[0] + u[1] * v[1] + (1.0 - u[0] - u[1]) * v[2])


_CACHE = {}


def _transforms(key, model):
    """The vmapped residual and Jacobian-row functions of one model, built once per model (so
    their recordings are kept between calls)."""
    got = _CACHE.get(key)
    if got is not None:
        return got
    m = model.m
    if model.complicated:
        def res(theta, u, weights, positions, point):
            return residual_complicated(theta, u, weights, positions, point, m)

        def row(theta, u, weights, positions, point, e):
            return (res(theta, u, weights, positions, point) * e).sum()
        objective = tf.vmap(res, in_dims=(None, 0, 0, 0, 0))
        rows = tf.vmap(tf.grad(row, argnums=(1, 0)), in_dims=(None, 0, 0, 0, 0, 0))
    else:
        def res(theta, weights, position, point):
            return residual_simple(theta, weights, position, point, m)

        def row(theta, weights, position, point, e):
            return (res(theta, weights, position, point) * e).sum()
        objective = tf.vmap(res, in_dims=(None, 0, 0, 0))
        rows = tf.vmap(tf.grad(row), in_dims=(None, 0, 0, 0, 0))
    if len(_CACHE) >= 8:
        _CACHE.clear()
    _CACHE[key] = objective, rows
    return objective, rows


class Prepared:
    def __init__(self, inp):
        data = inp["data"]
        self.m = Model(data["model"])
        corr = np.asarray(data["correspondences"], dtype=np.int64)
        self.points = np.asarray(data["points"], dtype=np.float64)
        self.theta = tg.from_numpy(np.asarray(inp["theta"], dtype=np.float64))
        us = np.asarray(inp.get("us", []), dtype=np.float64)
        self.complicated = us.size > 0
        if self.complicated:
            verts = self.m.triangles[corr]                          # (P, 3)
            self.args = [tg.from_numpy(us.reshape(-1, 2)), tg.from_numpy(self.m.weights[verts]),
                         tg.from_numpy(self.m.base_positions[verts])]
        else:
            self.args = [tg.from_numpy(self.m.weights[corr]),
                         tg.from_numpy(self.m.base_positions[corr])]
        self.args.append(tg.from_numpy(self.points))
        P = len(self.points)
        # the Jacobian's lanes: point i's row k at lane 3i + k, with the cotangent e_k
        self.rep = [tg.from_numpy(np.repeat(a.numpy(), 3, axis=0)) for a in self.args]
        self.e = tg.from_numpy(np.tile(np.eye(3), (P, 1)))
        self.objective, self.rows = _transforms((self.complicated,) + self.m.key(), self)


def objective(p):
    return p.objective(p.theta, *p.args).reshape(-1)


def jacobian(p):
    g = p.rows(p.theta, *p.rep, p.e)
    if p.complicated:
        du, dtheta = g                                  # (3P, 2), (3P, 26)
        return tg.cat([du, dtheta], 1)
    return g


FUNCTIONS = {
    "objective": Function(objective, Prepared, tolist),
    "jacobian": Function(jacobian, Prepared, tolist),
}
