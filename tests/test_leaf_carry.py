"""Leaves of a consumed tape are registered on the next current tape in one pass
(``tape._carry_leaves``): the training-loop pattern. Gradients must stay right when a leaf
changes size, dies, or is used on another tape in between."""
import gc
import threading
import weakref

import numpy as np

import tapegrad as tg
from tapegrad._core import tape as T


def _step(w, b, x):
    for p in (w, b):
        p.grad = None
    loss = ((w * x).sum() + b) ** 2
    loss.backward()
    return loss.item()


def test_training_loop_carries_leaves_and_gradients_stay_right():
    w = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    b = tg.tensor(0.25, dtype=tg.float64, requires_grad=True)
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)
    for _ in range(4):
        loss = _step(w, b, x)
        s = float(np.dot(w.detach().numpy(), x.numpy()) + b.item())
        assert abs(loss - s * s) < 1e-12
        np.testing.assert_allclose(w.grad.numpy(), 2 * s * x.numpy(), rtol=1e-12)
        assert abs(b.grad.item() - 2 * s) < 1e-12
        with tg.no_grad():
            w -= 0.01 * w.grad
    # the leaves were carried: their node on the current tape exists before any new op
    tp = T.current_tape()
    assert w._lref[0] is tp.wself and b._lref[0] is tp.wself


def test_leaf_resized_through_data_between_steps():
    w = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    b = tg.tensor(0.25, dtype=tg.float64, requires_grad=True)
    _step(w, b, tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64))
    T.current_tape()                         # carries w with 3 elements
    w.data = tg.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=tg.float64)
    x = tg.tensor([1.0, 1.0, 1.0, 1.0, 1.0], dtype=tg.float64)
    _step(w, b, x)
    s = 15.0 + 0.25
    np.testing.assert_allclose(w.grad.numpy(), 2 * s * np.ones(5), rtol=1e-12)


def test_leaf_used_on_another_tape_in_between():
    w = tg.tensor([0.5, -1.0], dtype=tg.float64, requires_grad=True)
    b = tg.tensor(0.0, dtype=tg.float64, requires_grad=True)
    x = tg.tensor([1.0, 2.0], dtype=tg.float64)
    _step(w, b, x)
    with T.recording():                      # w gets a node on a private tape meanwhile
        y = (w * 3.0).sum()
    w.grad = None
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])
    _step(w, b, x)
    s = 0.5 - 2.0
    np.testing.assert_allclose(w.grad.numpy(), 2 * s * x.numpy(), rtol=1e-12)


def test_carried_leaves_are_not_kept_alive():
    # in a thread of its own: its current tape carries no leaf that earlier tests keep alive
    errors = []

    def body():
        try:
            w = tg.tensor([0.5, -1.0], requires_grad=True)
            b = tg.tensor(0.0, requires_grad=True)
            _step(w, b, tg.tensor([1.0, 2.0]))
            ref = weakref.ref(w)
            del w
            gc.collect()
            assert ref() is None
            tp = T.current_tape()            # the dead leaf is skipped, the live one carried
            assert len(tp.leaf_pairs) == 1 and tp.leaf_pairs[0][1]() is b
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)
    th = threading.Thread(target=body)
    th.start()
    th.join()
    if errors:
        raise errors[0]


def test_token_handover_keeps_the_consumed_tape_apart():
    """From the third step on the leaf rows and the identity token move to the new tape; a
    leaf registered there afterwards must not match the consumed tape's nodes."""
    w = tg.tensor([0.5, -1.0], dtype=tg.float64, requires_grad=True)
    x = tg.tensor([1.0, 2.0], dtype=tg.float64)
    for _ in range(3):
        w.grad = None
        ((w * x).sum() ** 2).backward()
    w.grad = None
    h = w + x                                  # kept: a non-leaf of the tape consumed next
    ((h.sum()) ** 2).backward()                # (add saves nothing: h's graph stays usable)
    old = h._tape
    new = T.current_tape()
    assert new.wself is not old.wself and w._lref[0] is new.wself
    v = tg.tensor(3.0, dtype=tg.float64, requires_grad=True)
    _ = w * v                                  # v gets a node on the new tape (after w's row)
    w.grad = None
    (h * v).sum().backward()                   # recorded on the consumed tape: v re-registers
    assert abs(v.grad.item() - float((h.detach().numpy()).sum())) < 1e-12
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0], rtol=1e-12)
    assert old is not new


def test_many_steps_stay_right():
    w = tg.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    b = tg.tensor(0.1, requires_grad=True)
    x = tg.tensor(np.linspace(0, 2, 5))
    for _ in range(6):
        loss = _step(w, b, x)
        s = float(np.dot(w.detach().numpy(), x.numpy()) + b.item())
        np.testing.assert_allclose(w.grad.numpy(), 2 * s * x.numpy(), rtol=1e-5)
        assert abs(loss - s * s) <= 1e-5 * max(1.0, s * s)
