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
    n = points.shape[0]
    c1 = tg.cat([-2 * centroids, (centroids ** 2).sum(1, keepdim=True)], 1)    # (k, d+1)
    p1 = tg.cat([points, tg.ones((n, 1), dtype=points.dtype)], 1)              # (n, d+1)
    return (c1 @ p1.T).amin(0).sum() + (points ** 2).sum()


def _dir_terms(centroids, points, ones):
    """(grad . ones, grad): differentiating the first again gives the Hessian times ones."""
    (g,) = tg.autograd.grad(cost(points, centroids), centroids, create_graph=True)
    return (g * ones).sum(), g


_hvp_and_grad = tf.grad_and_value(_dir_terms, has_aux=True)


def direction(p):
    points, centroids, ones = p
    hv, (_, g) = _hvp_and_grad(centroids, points, ones)
    return g / hv


def prepare(inp):
    points, centroids = f64(inp["points"]), f64(inp["centroids"])
    return points, centroids, tg.ones_like(centroids)


FUNCTIONS = {
    "cost": Function(lambda p: cost(p[0], p[1]), prepare, float),
    "dir": Function(direction, prepare, tolist),
}
