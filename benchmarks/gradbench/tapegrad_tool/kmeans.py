"""kmeans: the k-means cost of centroids and one Newton step direction, gradient / (Hessian
times ones) (GradBench's kmeans eval)."""
import tapegrad as tg
import tapegrad.func as tf

from . import Function
from ._common import f64, tolist


def cost(points, centroids):
    """Sum over the points of the squared distance to the nearest centroid:
    |p|^2 + min_j (|c_j|^2 - 2 c_j . p), the bracket for all (j, p) as one matrix product
    [-2 c_j, |c_j|^2] @ [p, 1]^T."""
    return _brackets(points, centroids).amin(0).sum() + (points ** 2).sum()


def _brackets(points, centroids):
    n = points.shape[0]
    c1 = tg.cat([-2 * centroids, (centroids ** 2).sum(1, keepdim=True)], 1)    # (k, d+1)
    p1 = tg.cat([points, tg.ones((n, 1), dtype=points.dtype)], 1)              # (n, d+1)
    return c1 @ p1.T


def assigned_cost(points, centroids, nearest):
    """The cost with each point's nearest centroid given (``nearest``: the index of each
    point's): the same value, and the same derivatives wherever the nearest centroid is
    unique (the cost is piecewise quadratic: its pieces are the assignments)."""
    return ((points - centroids[nearest]) ** 2).sum()


def _dir_terms(centroids, points, ones, nearest):
    """(grad . ones, grad): differentiating the first again gives the Hessian times ones."""
    (g,) = tg.autograd.grad(assigned_cost(points, centroids, nearest), centroids,
                            create_graph=True)
    return (g * ones).sum(), g


_hvp_and_grad = tf.grad_and_value(_dir_terms, has_aux=True)


def nearest(points, centroids):
    """Each point's nearest centroid (an index tensor, found in numpy from the brackets,
    outside the recording: a recorded ``amin`` is guarded by the order of all k x n brackets,
    an argsort on every replay that took 80% of the direction's replay at k = 100; see
    README.md). An index tensor argument is an input of the replay, not a constant."""
    c, p = centroids.numpy(), points.numpy()
    return tg.from_numpy(((c ** 2).sum(1) - 2 * (p @ c.T)).argmin(1))       # (n, k): rows


def direction(p):
    points, centroids, ones = p
    hv, (_, g) = _hvp_and_grad(centroids, points, ones, nearest(points, centroids))
    return g / hv


def prepare(inp):
    points, centroids = f64(inp["points"]), f64(inp["centroids"])
    return points, centroids, tg.ones_like(centroids)


FUNCTIONS = {
    "cost": Function(lambda p: cost(p[0], p[1]), prepare, float),
    "dir": Function(direction, prepare, tolist),
}
