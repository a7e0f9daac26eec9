"""torch.nn.Buffer: marks a tensor assigned to a module attribute as a buffer."""
import tapegrad as _tg


class _BufferMeta(type):
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, _tg.Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """``module.x = nn.Buffer(t, persistent=True)`` registers ``t`` (detached) as a buffer;
    the object made is a plain tensor carrying ``persistent`` (as torch's)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _tg.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
