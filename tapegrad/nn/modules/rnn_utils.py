"""torch.nn.utils.rnn: PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence,
pack_sequence, unpad_sequence, unpack_sequence.

A PackedSequence holds the time-major interleaving of the (sorted by decreasing length)
sequences: ``data`` (sum of lengths, *), ``batch_sizes`` (how many sequences are still running
at each step, int64), and the permutations ``sorted_indices`` / ``unsorted_indices``.
"""
from collections import namedtuple

import numpy as np

import tapegrad as _tg

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


def _np(t):
    return np.asarray(t.detach().numpy() if isinstance(t, _tg.Tensor) else t)


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if isinstance(data, (list, tuple)) and len(data) == 2:
            return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)
        raise ValueError("PackedSequence: batch_sizes must be given")

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self, *args, **kwargs):
        return self

    def double(self):
        return self.to(dtype=_tg.float64)

    def float(self):
        return self.to(dtype=_tg.float32)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    if permutation is None:
        return None
    p = _np(permutation).astype(np.int64)
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=np.int64)
    return _tg.tensor(out)


def _lengths(lengths):
    if isinstance(lengths, _tg.Tensor):
        return _np(lengths).astype(np.int64).reshape(-1)
    return np.asarray(list(lengths), dtype=np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the
    given lengths."""
    lens = _lengths(lengths)
    if enforce_sorted:
        if lens.size > 1 and np.any(np.diff(lens) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
        order = np.arange(lens.size)
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = _tg.tensor(order.astype(np.int64))
        lens = lens[order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    if lens.size and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    T = int(lens[0]) if lens.size else 0
    if T > input.shape[0]:
        # (torch reads past the end here; tapegrad refuses)
        raise RuntimeError(f"pack_padded_sequence: a length ({T}) exceeds the padded sequence "
                           f"length ({input.shape[0]})")
    batch_sizes = np.array([(lens > t).sum() for t in range(T)], np.int64)
    rows = [input[t, :batch_sizes[t]] for t in range(T)]
    data = _tg.cat(rows, 0)
    return PackedSequence(data, _tg.tensor(batch_sizes), sorted_indices, None)


def _packed_positions(batch_sizes):
    """For each row of ``data``: (time step, batch slot)."""
    bs = _np(batch_sizes).astype(np.int64)
    t = np.repeat(np.arange(bs.size), bs)
    b = np.concatenate([np.arange(n) for n in bs]) if bs.size else np.zeros(0, np.int64)
    return t, b


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded (T, B, *) or (B, T, *), lengths) of a PackedSequence (original batch order)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes
    bs = _np(batch_sizes).astype(np.int64)
    T, B = bs.size, int(bs[0]) if bs.size else 0
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
        T = total_length
    t, b = _packed_positions(batch_sizes)
    feat = tuple(data.shape[1:])
    flat = _tg.full((T * B,) + feat, padding_value, dtype=data.dtype)
    pos = _tg.tensor(t * B + b)
    idx = pos.reshape((-1,) + (1,) * len(feat)).expand((pos.shape[0],) + feat)
    out = flat.scatter(0, idx, data).reshape((T, B) + feat)
    lengths = np.array([(bs > i).sum() for i in range(B)], np.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lengths = lengths[_np(sequence.unsorted_indices).astype(np.int64)]
    if batch_first:
        out = out.transpose(0, 1)
    return out, _tg.tensor(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack variable-length tensors (L_i, *) into (T, B, *) (or (B, T, *)), padded."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    sequences = list(sequences) if not isinstance(sequences, _tg.Tensor) else list(
        sequences.unbind(0))
    T = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        n = s.shape[0]
        if n < T:
            pad = _tg.full((T - n,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
            s = _tg.cat([s, pad], 0) if padding_side == "right" else _tg.cat([pad, s], 0)
        out.append(s)
    return _tg.stack(out, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(_lengths(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    lengths = [v.size(0) for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
