"""tapegrad.save / tapegrad.load (tapegrad/serialization.py): PyTorch's zip checkpoint format.

Without torch: the fixtures in tests/data/ (written by real PyTorch 2.13, see
make_torch_fixtures.py) load to the recorded values, a tapegrad model evaluates them as torch
did, round trips preserve values, dtypes, sharing and structure, the archive layout is torch's,
and weights_only refuses what torch refuses. With torch: files written by tapegrad load in
torch (weights_only=True) and files written by torch load in tapegrad.
"""
import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import tapegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def _np(t):
    return t.detach().numpy()


def test_loads_torch_written_checkpoint():
    ck = tg.load(os.path.join(DATA, "torch213_mlp.pt"))
    vals = np.load(os.path.join(DATA, "torch213_values.npz"))
    sd = ck["model"]
    assert isinstance(sd, collections.OrderedDict)
    assert list(sd.keys()) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                               "1.running_var", "1.num_batches_tracked", "3.weight", "3.bias"]
    assert sd._metadata["1"] == {"version": 2}
    for k, v in sd.items():
        np.testing.assert_array_equal(_np(v), vals["model." + k])
        assert isinstance(v, tg.Tensor)
    assert sd["1.num_batches_tracked"].dtype == tg.int64
    opt = ck["optimizer"]
    assert opt["param_groups"][0]["lr"] == 0.01 and opt["param_groups"][0]["params"] == list(
        range(6))
    for i, st in opt["state"].items():
        for k, v in st.items():
            np.testing.assert_array_equal(_np(v), vals[f"opt.{i}.{k}"])
    assert ck["epoch"] == 7 and ck["loss"] == 0.5 and ck["note"] == "fixture"
    a, b = ck["shared"]
    assert a.tolist() == [0, 1, 2, 3, 4, 5] and b.tolist() == [1, 2, 3, 4, 5]
    assert ck["meta"]["dtype"] is tg.float64 and ck["meta"]["size"] == tg.Size([2, 3])
    i64, i32, u8, bl = ck["ints"]
    assert (i64.dtype, i32.dtype, u8.dtype, bl.dtype) == (tg.int64, tg.int32, tg.uint8, tg.bool)
    assert i64.tolist() == [1, -2, 3] and u8.tolist() == [7, 250] and bl.tolist() == [True, False]
    assert ck["f64"].dtype == tg.float64 and ck["f64"].tolist() == [[1.5, -2.25], [3.0, 4e-300]]


def test_torch_checkpoint_drives_a_tapegrad_model_like_torch():
    nn = tg.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    ck = tg.load(os.path.join(DATA, "torch213_mlp.pt"))
    assert str(model.load_state_dict(ck["model"])) == "<All keys matched successfully>"
    model.eval()
    x = np.load(os.path.join(DATA, "torch213_eval_in.npy"))
    with tg.no_grad():
        y = model(tg.tensor(x))
    np.testing.assert_allclose(_np(y), np.load(os.path.join(DATA, "torch213_eval_out.npy")),
                               rtol=1e-5, atol=1e-6)
    opt = tg.optim.Adam(model.parameters(), lr=0.5)
    opt.load_state_dict(ck["optimizer"])
    assert opt.param_groups[0]["lr"] == 0.01
    assert float(opt.state[model[0].weight]["step"]) == 3.0


def test_loads_legacy_format():
    ck = tg.load(os.path.join(DATA, "torch213_legacy.pt"))
    assert ck["w"].tolist() == [[1.0, 2.0], [3.0, 4.0]] and ck["b"].tolist() == [0.5, -0.5]


def test_round_trip_values_dtypes_structure(tmp_path):
    p = tg.nn.Parameter(tg.randn(3, 2))
    base = tg.arange(12.0).reshape(3, 4)
    obj = {"p": p, "t": tg.randn(2, 3, dtype=tg.float64), "i": tg.tensor([1, 2, 3]),
           "b": tg.tensor([True, False]), "u8": tg.tensor([1, 255], dtype=tg.uint8),
           "scalar": tg.tensor(3.5), "empty": tg.zeros(0, 3), "nested": [1, (2.5, "x"), None],
           "view": base[1:], "col": base[:, 1], "t_base": base, "dtype": tg.float16,
           "size": tg.Size([4]), "dev": tg.device("cpu"), "od": collections.OrderedDict(a=1),
           "set": {1, 2}, "bytes": b"\x00\x01"}
    f = tmp_path / "ck.pt"
    tg.save(obj, f)
    back = tg.load(f)
    assert isinstance(back["p"], tg.nn.Parameter) and back["p"].requires_grad
    for k in ("p", "t", "i", "b", "u8", "scalar", "empty", "view", "col", "t_base"):
        assert back[k].dtype == obj[k].dtype, k
        assert tuple(back[k].shape) == tuple(obj[k].shape), k
        np.testing.assert_array_equal(_np(back[k]), _np(obj[k]), err_msg=k)
    assert back["nested"] == [1, (2.5, "x"), None]
    assert back["dtype"] is tg.float16 and back["size"] == tg.Size([4])
    assert str(back["dev"]) == "cpu" and back["od"] == collections.OrderedDict(a=1)
    assert back["set"] == {1, 2} and back["bytes"] == b"\x00\x01"


def test_archive_layout_is_torchs(tmp_path):
    f = tmp_path / "model.pt"
    base = tg.arange(6.0)
    tg.save({"a": base, "b": base[2:], "c": tg.ones(2, dtype=tg.int64)}, f)
    with zipfile.ZipFile(f) as z:
        names = z.namelist()
        assert names == ["model/data.pkl", "model/.format_version", "model/.storage_alignment",
                         "model/byteorder", "model/data/0", "model/data/1", "model/version",
                         "model/.data/serialization_id"]
        assert z.read("model/version") == b"3\n" and z.read("model/byteorder") == b"little"
        assert len(z.read("model/data/0")) == 6 * 4       # one storage for the tensor and its view
        import pickletools
        ops = [(op.name, arg) for op, arg, _ in pickletools.genops(z.read("model/data.pkl"))]
        assert ("GLOBAL", "torch._utils _rebuild_tensor_v2") in ops
        assert ("GLOBAL", "torch FloatStorage") in ops and ("GLOBAL", "torch LongStorage") in ops
        for info in z.infolist():                           # data aligned to 64 bytes
            if "/data/" in info.filename:
                raw = open(f, "rb").read()
                off = info.header_offset
                nl, el = int.from_bytes(raw[off + 26:off + 28], "little"), \
                    int.from_bytes(raw[off + 28:off + 30], "little")
                assert (off + 30 + nl + el) % 64 == 0


def test_buffer_round_trip_and_archive_name():
    buf = io.BytesIO()
    tg.save([tg.ones(2)], buf)
    buf.seek(0)
    assert zipfile.ZipFile(buf).namelist()[0] == "archive/data.pkl"
    buf.seek(0)
    assert tg.load(buf)[0].tolist() == [1.0, 1.0]


class Custom:
    def __init__(self):
        self.x = 3


def test_weights_only_refuses_unknown_globals_and_allows_safe_ones(tmp_path):
    f = tmp_path / "c.pt"
    tg.save({"obj": Custom(), "t": tg.ones(1)}, f)
    with pytest.raises(pickle.UnpicklingError) as ei:
        tg.load(f)
    msg = str(ei.value)
    assert msg.startswith("Weights only load failed.")
    assert "Unsupported global: GLOBAL test_serialization.Custom was not an allowed global" in msg
    assert tg.load(f, weights_only=False)["obj"].x == 3
    with tg.serialization.safe_globals([Custom]):
        assert tg.load(f)["obj"].x == 3
    with pytest.raises(pickle.UnpicklingError):
        tg.load(f)
    assert tg.serialization.get_unsafe_globals_in_checkpoint(f) == ["test_serialization.Custom"]
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit "
                                           "pickle_module is specified"):
        tg.load(f, pickle_module=pickle, weights_only=True)


def test_whole_module_pickles_with_weights_only_false(tmp_path):
    m = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.Tanh())
    f = tmp_path / "m.pt"
    tg.save(m, f)
    m2 = tg.load(f, weights_only=False)
    assert repr(m2) == repr(m)
    x = tg.randn(3, 2)
    np.testing.assert_array_equal(_np(m2(x)), _np(m(x)))


def test_cuda_location_needs_map_location(tmp_path):
    f = tmp_path / "g.pt"
    tg.save({"w": tg.ones(2)}, f)
    with zipfile.ZipFile(f) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    entries["g/data.pkl"] = entries["g/data.pkl"].replace(b"X\x03\x00\x00\x00cpu",
                                                          b"X\x06\x00\x00\x00cuda:0")
    g2 = tmp_path / "g2.pt"
    with zipfile.ZipFile(g2, "w") as z:
        for n, v in entries.items():
            z.writestr(n.replace("g/", "g2/"), v)
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        tg.load(g2)
    assert tg.load(g2, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert tg.load(g2, map_location=tg.device("cpu"))["w"].tolist() == [1.0, 1.0]


@needs_torch
def test_torch_reads_tapegrad_files_weights_only(tmp_path):
    m = tg.nn.Sequential(tg.nn.Conv2d(1, 2, 3), tg.nn.BatchNorm2d(2), tg.nn.Flatten(),
                         tg.nn.LSTM(4, 3))
    opt = tg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    for p in m.parameters():
        p.grad = tg.ones_like(p)
    opt.step()
    f = tmp_path / "tg.pt"
    base = tg.arange(8.0)
    tg.save({"model": m.state_dict(), "opt": opt.state_dict(), "p": tg.nn.Parameter(tg.ones(3)),
             "view": base[3:6], "base": base, "dt": tg.int32, "sz": tg.Size([1, 2]),
             "misc": [1, 2.5, "s", None, (True,)]}, f)
    t = torch.load(f)        # weights_only=True in torch 2.13
    tm = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                             torch.nn.Flatten(), torch.nn.LSTM(4, 3))
    assert str(tm.load_state_dict(t["model"])) == "<All keys matched successfully>"
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(t["model"][k].numpy(), _np(v))
        assert str(t["model"][k].dtype) == str(v.dtype)
    assert t["model"]._metadata == m.state_dict()._metadata
    topt = torch.optim.SGD(tm.parameters(), lr=0.5, momentum=0.9)
    topt.load_state_dict(t["opt"])
    assert topt.param_groups[0]["lr"] == 0.1
    assert isinstance(t["p"], torch.nn.Parameter) and t["p"].requires_grad
    assert t["view"].tolist() == [3.0, 4.0, 5.0] and t["view"].storage_offset() == 3
    assert t["view"].untyped_storage().data_ptr() == t["base"].untyped_storage().data_ptr()
    assert t["dt"] is torch.int32 and t["sz"] == torch.Size([1, 2])
    assert t["misc"] == [1, 2.5, "s", None, (True,)]


@needs_torch
def test_tapegrad_reads_torch_files(tmp_path):
    f = tmp_path / "t.pt"
    tm = torch.nn.GRU(3, 4, num_layers=2)
    torch.save({"sd": tm.state_dict(), "x": torch.randn(2, 3, dtype=torch.float64).t(),
                "h": torch.tensor(2.0).half()}, f)
    g = tg.load(f)
    gm = tg.nn.GRU(3, 4, num_layers=2)
    gm.load_state_dict(g["sd"])
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(_np(gm.state_dict()[k]), v.numpy())
    tx = torch.load(f)["x"]
    np.testing.assert_array_equal(_np(g["x"]), tx.numpy())        # a transposed (strided) view
    assert g["h"].dtype == tg.float16 and float(g["h"]) == 2.0
