"""RNN, LSTM, GRU (num_layers, bidirectional, batch_first, dropout, h0/c0, proj_size for LSTM,
PackedSequence inputs) and RNNCell, LSTMCell, GRUCell.

Each layer computes the input projection of every time step at once (``x W_ih^T + b_ih``, one
product), then steps through time with ``h W_hh^T + b_hh`` and the gate arithmetic in torch's
order (LSTM gates i, f, g, o; GRU gates r, z, n with n = tanh(x_n + r * (W_hn h + b_hn)) and
h' = (h - n) * z + n). Sequences of different lengths (PackedSequence) keep their state once
they end and output zeros there; the reverse direction reads each sequence from its own end.
"""
import math
import numbers
import warnings

import numpy as np
from numba import njit

import tapegrad as _tg
from .. import init
from ..parameter import Parameter
from .module import Module
from .rnn_utils import PackedSequence
from .rnn_utils import _packed_positions
from ...autograd.function import Function, once_differentiable
from ..._core.names import name_id
from ..._compiled._native import openblas_threads

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _F():
    return _tg.nn.functional


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


# ----------------------------------------------------------------------------- cell math
def _lstm_step(gates, c, w_hr):
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = _tg.sigmoid(i), _tg.sigmoid(f), _tg.tanh(g), _tg.sigmoid(o)
    c_new = f * c + i * g
    h_new = o * _tg.tanh(c_new)
    if w_hr is not None:
        h_new = h_new.matmul(w_hr.t())
    return h_new, c_new


def _gru_step(xg, hg, h):
    xr, xz, xn = xg.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r = _tg.sigmoid(hr + xr)
    z = _tg.sigmoid(hz + xz)
    n = _tg.tanh(xn + hn * r)
    return (h - n) * z + n


# ----------------------------------------------------------------------------- fused layer
# One direction of one layer as one autograd Function: the forward and the backward through
# time (BPTT) in numpy, in the parameters' dtype, with the same gate arithmetic as the
# op-by-op path below (which stays for projections and packed sequences). One tape entry per
# layer and direction instead of ~15 per time step. Its backward is not itself differentiable
# (create_graph through a recurrent layer raises, as a once_differentiable Function does).
def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _lstm_cell(hh, xpt, c, a, c_prev, tc, h):
    """One LSTM step after the hidden product, in place (hh is scratch): gates = hh + the
    x-projection, (i, f, g, o) into a, the previous c kept in c_prev, c updated in place,
    tanh(c) into tc, h = o tanh(c). numpy's SIMD exp/tanh, no temporaries."""
    H = c.shape[1]
    np.add(hh, xpt, out=hh)
    np.negative(hh, out=a)                  # sigmoid over all four blocks, g's then tanh
    np.exp(a, out=a)
    a += 1
    np.reciprocal(a, out=a)
    np.tanh(hh[:, 2 * H:3 * H], out=a[:, 2 * H:3 * H])
    c_prev[...] = c
    np.multiply(a[:, :H], a[:, 2 * H:3 * H], out=h)     # (h as scratch: i g)
    c *= a[:, H:2 * H]
    c += h
    np.tanh(c, out=tc)
    np.multiply(a[:, 3 * H:], tc, out=h)


@njit(cache=True, error_model="numpy")
def _lstm_cell_vjp(dh, go, dc, a, c_prev, tc, d):
    """The LSTM step's VJP up to the gates: dh += go (the output's gradient at this step),
    the gate gradients into d, dc updated in place to the previous step's."""
    B, H4 = a.shape
    H = H4 // 4
    for b in range(B):
        for j in range(H):
            dhv = dh[b, j] + go[b, j]
            i = a[b, j]
            f = a[b, H + j]
            g = a[b, 2 * H + j]
            o = a[b, 3 * H + j]
            t = tc[b, j]
            dcv = dc[b, j] + dhv * o * (1 - t * t)
            d[b, j] = dcv * g * i * (1 - i)
            d[b, H + j] = dcv * c_prev[b, j] * f * (1 - f)
            d[b, 2 * H + j] = dcv * i * (1 - g * g)
            d[b, 3 * H + j] = dhv * t * o * (1 - o)
            dc[b, j] = dcv * f


def _layer_forward(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    T, B, _ = x.shape
    xp = (x.reshape(T * B, -1) @ w_ih.T).reshape(T, B, -1)
    if b_ih is not None:
        xp += b_ih
    H = w_hh.shape[1]
    out = np.empty((T, B, H), x.dtype)
    hs = np.empty((T, B, H), x.dtype)            # h before each step
    acts = np.empty((T, B, w_hh.shape[0]), x.dtype)
    cs = np.empty((T, B, H), x.dtype) if mode == "LSTM" else None    # c before each step
    tcs = np.empty((T, B, H), x.dtype) if mode == "LSTM" else None
    hn = np.empty((T, B, H), x.dtype) if mode == "GRU" else None     # W_hn h + b_hn
    if mode == "LSTM":
        c = np.array(c, x.dtype)            # (updated in place by the step)
    for t in range(T):
        hs[t] = h
        hh = h @ w_hh.T
        if b_hh is not None:
            hh += b_hh
        if mode == "LSTM":
            _lstm_cell(hh, xp[t], c, acts[t], cs[t], tcs[t], out[t])
            h = out[t]
            continue
        if mode == "GRU":
            a = acts[t]
            a[:, :H] = _sig(hh[:, :H] + xp[t, :, :H])
            a[:, H:2 * H] = _sig(hh[:, H:2 * H] + xp[t, :, H:2 * H])
            hn[t] = hh[:, 2 * H:]
            a[:, 2 * H:] = np.tanh(xp[t, :, 2 * H:] + hh[:, 2 * H:] * a[:, :H])
            n = a[:, 2 * H:]
            h = (h - n) * a[:, H:2 * H] + n
        else:
            pre = hh + xp[t]
            acts[t] = np.tanh(pre) if mode == "RNN_TANH" else np.maximum(pre, 0)
            h = acts[t]
        out[t] = h
    return out, h, c, (hs, acts, cs, tcs, hn)


def _layer_backward(mode, saved, x, w_ih, w_hh, has_bias, g_out, g_h, g_c):
    hs, acts, cs, tcs, hn = saved
    T, B, H = hs.shape
    dt = x.dtype
    dh = np.zeros((B, H), dt) if g_h is None else g_h.copy()
    dc = None
    if mode == "LSTM":
        dc = np.zeros((B, H), dt) if g_c is None else g_c.copy()
    dX = np.empty((T, B, w_ih.shape[0]), dt)     # gradients of the input projections
    dHH = np.empty((T, B, w_hh.shape[0]), dt) if mode == "GRU" else None
    if mode == "LSTM":
        zero = np.zeros((B, H), dt)
        dc = np.array(dc, dt)
    for t in range(T - 1, -1, -1):
        if mode == "LSTM":
            d = dX[t]
            _lstm_cell_vjp(dh, zero if g_out is None else np.ascontiguousarray(g_out[t], dt),
                           dc, acts[t], cs[t], tcs[t], d)
            dh = d @ w_hh
            continue
        if g_out is not None:
            dh = dh + g_out[t]
        a = acts[t]
        if mode == "GRU":
            r, z, n = a[:, :H], a[:, H:2 * H], a[:, 2 * H:]
            hprev = hs[t]
            dz = dh * (hprev - n)
            dn = dh * (1 - z) * (1 - n * n)
            dr = dn * hn[t] * r * (1 - r)
            dzp = dz * z * (1 - z)
            d = dX[t]
            d[:, :H] = dr
            d[:, H:2 * H] = dzp
            d[:, 2 * H:] = dn
            e = dHH[t]
            e[:, :H] = dr
            e[:, H:2 * H] = dzp
            e[:, 2 * H:] = dn * r
            dh = dh * z + e @ w_hh
        else:
            d = dX[t]
            if mode == "RNN_TANH":
                d[...] = dh * (1 - a * a)
            else:
                d[...] = dh * (a > 0)
            dh = d @ w_hh
    dHr = (dHH if mode == "GRU" else dX).reshape(T * B, -1)
    dXr = dX.reshape(T * B, -1)
    d_w_hh = dHr.T @ hs.reshape(T * B, H)
    d_w_ih = dXr.T @ x.reshape(T * B, -1)
    d_x = (dXr @ w_ih).reshape(x.shape)
    d_b_ih = dXr.sum(0) if has_bias else None
    d_b_hh = dHr.sum(0) if has_bias else None
    return d_x, dh, dc, d_w_ih, d_w_hh, d_b_ih, d_b_hh


class _OneBlasThread:
    """OpenBLAS held to one thread (restored after): the per-step products are small, and
    waking its other threads for each costs more than they save (much more on a busy
    machine, where a woken thread waits for a time slice). Uses tapegrad's handle on numpy's
    OpenBLAS (``openblas_threads`` gives None when it is not found: then nothing changes)."""

    _fns = False

    def __enter__(self):
        if _OneBlasThread._fns is False:
            _OneBlasThread._fns = openblas_threads()
        fns = _OneBlasThread._fns
        self.prev = None
        if fns is not None:
            self.prev = fns[0]()
            fns[1](1)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            _OneBlasThread._fns[1](self.prev)


def _name_id(name):
    return name_id(name)


def _fused_cls(mode):

    class _RecurrentLayer(Function):
        @staticmethod
        def _node_name_id():
            return _name_id("MkldnnRnnLayerBackward0" if mode == "LSTM" else "StackBackward0")

        @staticmethod
        def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh):
            arr = [None if t is None else t.detach().numpy() for t in
                   (x, h0, c0, w_ih, w_hh, b_ih, b_hh)]
            with _OneBlasThread():
                out, h, c, saved = _layer_forward(mode, *arr)
            ctx.saved = saved
            ctx.save_for_backward(x, w_ih, w_hh)
            ctx.has_bias = b_ih is not None
            res = (_tg.from_numpy(out), _tg.from_numpy(np.ascontiguousarray(h)))
            if mode == "LSTM":
                return res + (_tg.from_numpy(np.ascontiguousarray(c)),)
            return res

        @staticmethod
        @once_differentiable
        def backward(ctx, g_out, g_h, g_c=None):
            x, w_ih, w_hh = ctx.saved_tensors
            arrs = [None if g is None else g.detach().numpy() for g in (g_out, g_h, g_c)]
            with _OneBlasThread():
                res = _layer_backward(mode, ctx.saved, x.detach().numpy(),
                                      w_ih.detach().numpy(), w_hh.detach().numpy(),
                                      ctx.has_bias, *arrs)
            return tuple(None if r is None else _tg.from_numpy(np.ascontiguousarray(r))
                         for r in res)

    _RecurrentLayer.__name__ = "MkldnnRnnLayer" if mode == "LSTM" else "RecurrentLayer"
    return _RecurrentLayer


_FUSED = {}


def _fused_direction(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, reverse):
    cls = _FUSED.get(mode)
    if cls is None:
        cls = _FUSED[mode] = _fused_cls(mode)
    xin = x.flip(0) if reverse else x
    if mode == "LSTM":
        out, h_t, c_t = cls.apply(xin.contiguous(), h.contiguous(), c.contiguous(), w_ih,
                                  w_hh, b_ih, b_hh)
    else:
        out, h_t = cls.apply(xin.contiguous(), h.contiguous(), None, w_ih, w_hh, b_ih, b_hh)
        c_t = None
    return (out.flip(0) if reverse else out), h_t, c_t


def _run_direction(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, lengths, reverse):
    """One direction of one layer over x (T, B, I): (outputs (T, B, H), h_T, c_T)."""
    if w_hr is None and lengths is None and x.dtype in (_tg.float32, _tg.float64) \
            and x.shape[0] > 0:
        return _fused_direction(mode, x, h, c, w_ih, w_hh, b_ih, b_hh, reverse)
    F = _F()
    T, B = x.shape[0], x.shape[1]
    rev_idx = None
    if reverse:
        if lengths is None:
            x = x.flip(0)
        else:
            t = np.arange(T)[:, None]
            src = np.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)
            rev_idx = _tg.tensor(src.astype(np.int64))
            x = x.gather(0, rev_idx.unsqueeze(2).expand(T, B, x.shape[2]))
    xp = F.linear(x, w_ih, b_ih)
    masks = None
    if lengths is not None and not np.all(lengths == T):
        masks = [_tg.tensor((lengths > t)[:, None]) for t in range(T)]
    outs = []
    for t in range(T):
        if mode == "GRU":
            hg = F.linear(h, w_hh, b_hh)
            h_new = _gru_step(xp[t], hg, h)
            c_new = None
        else:
            gates = F.linear(h, w_hh, b_hh) + xp[t]
            if mode == "LSTM":
                h_new, c_new = _lstm_step(gates, c, w_hr)
            else:
                h_new = _tg.tanh(gates) if mode == "RNN_TANH" else F.relu(gates)
                c_new = None
        if masks is not None:
            m = masks[t]
            outs.append(_tg.where(m, h_new, _tg.zeros_like(h_new)))
            h = _tg.where(m, h_new, h)
            if c_new is not None:
                c = _tg.where(m, c_new, c)
        else:
            outs.append(h_new)
            h, c = h_new, c_new
    out = _tg.stack(outs, 0)
    if reverse:
        if rev_idx is None:
            out = out.flip(0)
        else:
            out = out.gather(0, rev_idx.unsqueeze(2).expand(T, B, out.shape[2]))
    return out, h, c


class RNNBase(Module):
    """Base class of RNN, LSTM and GRU (torch's parameter names ``weight_ih_l{k}``,
    ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``, ``weight_hr_l{k}``, suffix
    ``_reverse``; all initialised U(-1/sqrt(hidden), 1/sqrt(hidden)))."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        fk = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_size = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}.get(mode)
        if gate_size is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size *= hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                params = [Parameter(_tg.empty((gate_size, layer_input), **fk)),
                          Parameter(_tg.empty((gate_size, real_hidden), **fk))]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    params += [Parameter(_tg.empty(gate_size, **fk)),
                               Parameter(_tg.empty(gate_size, **fk))]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    params.append(Parameter(_tg.empty((proj_size, hidden_size), **fk)))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, p in zip(names, params):
                    setattr(self, name, p)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, wn) if hasattr(self, wn) else None
                for wn in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, w) for w in weights] for weights in self._all_weights]

    def flatten_parameters(self):
        """A no-op (cuDNN weight packing)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input, batch_sizes):
        w0 = self._flat_weights[0]
        if input.dtype != w0.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w0.dtype}). Convert input: input.to({w0.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got "
                               f"{input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def __setstate__(self, d):
        super().__setstate__(d)
        if "proj_size" not in d:
            self.proj_size = 0

    # ---- the stacked, possibly bidirectional, computation (time-major input)
    def _run(self, x, h0, c0, lengths):
        num_dirs = 2 if self.bidirectional else 1
        hs, cs = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(num_dirs):
                k = layer * num_dirs + d
                names = self._all_weights[k]
                ws = [getattr(self, n) for n in names]
                w_ih, w_hh = ws[0], ws[1]
                b_ih = b_hh = w_hr = None
                if self.bias:
                    b_ih, b_hh = ws[2], ws[3]
                if self.proj_size > 0:
                    w_hr = ws[-1]
                out, h, c = _run_direction(self.mode, layer_in, h0[k],
                                           None if c0 is None else c0[k], w_ih, w_hh, b_ih,
                                           b_hh, w_hr, lengths, d == 1)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            layer_in = outs[0] if num_dirs == 1 else _tg.cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_in = _F().dropout(layer_in, self.dropout, True)
        h_n = _tg.stack(hs, 0)
        c_n = _tg.stack(cs, 0) if c0 is not None else None
        return layer_in, h_n, c_n

    def _forward_impl(self, input, hx):
        """Shared forward of RNN/GRU (hx a tensor) and LSTM (hx a pair)."""
        lstm = self.mode == "LSTM"
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        num_dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        orig_input = input
        is_batched = True
        batch_dim = 0 if self.batch_first else 1
        if isinstance(orig_input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            max_batch = int(batch_sizes[0])
            if hx is not None:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 f"{'instead' if name != 'RNN' else 'tensor instead'}")
            is_batched = input.dim() == 3
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            max_batch = input.size(0) if self.batch_first else input.size(1)
            if hx is not None:
                if lstm:
                    if is_batched and (hx[0].dim() != 3 or hx[1].dim() != 3):
                        raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D "
                                           f"but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                    if not is_batched:
                        if hx[0].dim() != 2 or hx[1].dim() != 2:
                            raise RuntimeError("For unbatched 2-D input, hx and cx should also "
                                               f"be 2-D but got ({hx[0].dim()}-D, "
                                               f"{hx[1].dim()}-D) tensors")
                        hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
                else:
                    if is_batched and hx.dim() != 3:
                        raise RuntimeError("For batched 3-D input, hx should also be 3-D but got "
                                           f"{hx.dim()}-D tensor")
                    if not is_batched:
                        if hx.dim() != 2:
                            raise RuntimeError("For unbatched 2-D input, hx should also be 2-D "
                                               f"but got {hx.dim()}-D tensor")
                        hx = hx.unsqueeze(1)
        x_in = data if batch_sizes is not None else input
        dt = x_in.dtype
        if hx is None:
            h0 = _tg.zeros(self.num_layers * num_dirs, max_batch, real_hidden, dtype=dt)
            hx = (h0, _tg.zeros(self.num_layers * num_dirs, max_batch, self.hidden_size,
                                dtype=dt)) if lstm else h0
        if lstm:
            self.check_input(x_in, batch_sizes)
            self.check_hidden_size(hx[0], self.get_expected_hidden_size(x_in, batch_sizes),
                                   "Expected hidden[0] size {}, got {}")
            self.check_hidden_size(hx[1], (self.num_layers * num_dirs, max_batch,
                                           self.hidden_size), "Expected hidden[1] size {}, got {}")
        else:
            self.check_forward_args(x_in, hx, batch_sizes)
        h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)
        if batch_sizes is not None:
            bs = np.asarray(batch_sizes.numpy(), np.int64)
            T = bs.size
            lengths = np.array([(bs > i).sum() for i in range(max_batch)], np.int64)
            t, b = _packed_positions(batch_sizes)
            pos = _tg.tensor(t * max_batch + b)
            feat = data.shape[1]
            padded = _tg.zeros(T * max_batch, feat, dtype=dt).index_copy(0, pos, data)
            out, h_n, c_n = self._run(padded.reshape(T, max_batch, feat), h0, c0, lengths)
            out = out.reshape(T * max_batch, -1).index_select(0, pos)
            hidden = (h_n, c_n) if lstm else h_n
            return (PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        x = input.transpose(0, 1) if self.batch_first else input
        out, h_n, c_n = self._run(x, h0, c0, None)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(batch_dim)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return out, ((h_n, c_n) if lstm else h_n)


class RNN(RNNBase):
    """Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o; optional projection ``proj_size``)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx)


# ----------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        fk = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_tg.empty((num_chunks * hidden_size, input_size), **fk))
        self.weight_hh = Parameter(_tg.empty((num_chunks * hidden_size, hidden_size), **fk))
        if bias:
            self.bias_ih = Parameter(_tg.empty(num_chunks * hidden_size, **fk))
            self.bias_hh = Parameter(_tg.empty(num_chunks * hidden_size, **fk))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check(self, input, hxs, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        is_batched = input.dim() == 2
        x = input if is_batched else input.unsqueeze(0)
        if x.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.size(1)} expected "
                               f"{self.input_size}")
        out = []
        for i, h in enumerate(hxs):
            if h is None:
                h = _tg.zeros(x.size(0), self.hidden_size, dtype=x.dtype)
            elif not is_batched:
                h = h.unsqueeze(0)
            if x.size(0) != h.size(0):
                raise RuntimeError(f"Input batch size {x.size(0)} doesn't match hidden{i} batch "
                                   f"size {h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, "
                                   f"expected {self.hidden_size}")
            out.append(h)
        return x, out, is_batched


class RNNCell(RNNCellBase):
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        x, (h,), is_batched = self._check(input, [hx], "RNNCell")
        F = _F()
        pre = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh,
                                                                   self.bias_hh)
        if self.nonlinearity == "tanh":
            ret = _tg.tanh(pre)
        elif self.nonlinearity == "relu":
            ret = F.relu(pre)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        x, (h, c), is_batched = self._check(input, [None, None] if hx is None else list(hx),
                                            "LSTMCell")
        F = _F()
        gates = F.linear(h, self.weight_hh, self.bias_hh) + F.linear(x, self.weight_ih,
                                                                     self.bias_ih)
        h_new, c_new = _lstm_step(gates, c, None)
        if not is_batched:
            return h_new.squeeze(0), c_new.squeeze(0)
        return h_new, c_new


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        x, (h,), is_batched = self._check(input, [hx], "GRUCell")
        F = _F()
        ret = _gru_step(F.linear(x, self.weight_ih, self.bias_ih),
                        F.linear(h, self.weight_hh, self.bias_hh), h)
        return ret if is_batched else ret.squeeze(0)
