"""lstm: the loss of a multi-layer LSTM predicting a text one character ahead, and its gradient
w.r.t. the main and extra parameters (GradBench's lstm eval, ADBench's formulation)."""
import tapegrad as tg
import tapegrad.func as tf

from . import Function
from ._common import f64


def cell(weight, bias, hidden, cell_state, x):
    """One LSTM cell. ADBench's gates are ``cat((x, h, x, h)) * weight + bias``: taken segment
    by segment, without the concatenation."""
    b = hidden.shape[0]
    forget = tg.sigmoid(x * weight[:b] + bias[:b])
    ingate = tg.sigmoid(hidden * weight[b:2 * b] + bias[b:2 * b])
    outgate = tg.sigmoid(x * weight[2 * b:3 * b] + bias[2 * b:3 * b])
    change = tg.tanh(hidden * weight[3 * b:] + bias[3 * b:])
    cell_state = cell_state * forget + ingate * change
    return outgate * tg.tanh(cell_state), cell_state


def lstm_objective(main_params, extra_params, state, sequence):
    n_layers = main_params.shape[0] // 2
    c, b = sequence.shape
    states = [state[i] for i in range(2 * n_layers)]
    total = 0.0
    x_in = sequence[0]
    for t in range(c - 1):
        x = x_in * extra_params[0]
        new = []
        for i in range(0, 2 * n_layers, 2):
            h, cs = cell(main_params[i], main_params[i + 1], states[i], states[i + 1], x)
            new += [h, cs]
            x = h
        states = new
        ypred = x * extra_params[1] + extra_params[2]
        # ADBench's normalisation: Python's sum(exp(ypred), 2), i.e. 2 + the sum
        ynorm = ypred - tg.log(tg.exp(ypred).sum() + 2)
        x_in = sequence[t + 1]
        total = total + (x_in * ynorm).sum()
    return -total / ((c - 1) * b)


objective = tg.compile(lstm_objective)
gradient = tf.grad(lstm_objective, argnums=(0, 1))


def prepare(inp):
    return tuple(f64(inp[k]) for k in ("main_params", "extra_params", "state", "sequence"))


def _gradient(p):
    return gradient(*p)


FUNCTIONS = {
    "objective": Function(lambda p: objective(*p), prepare, float),
    "jacobian": Function(_gradient, prepare,
                         lambda g: g[0].numpy().ravel().tolist() + g[1].numpy().ravel().tolist()),
}
