"""torch.utils.hooks: ``RemovableHandle`` (what the ``register_*_hook`` methods of modules and
optimizers return)."""
import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle", "unserializable_hook"]


class RemovableHandle:
    """A handle that removes a hook from the dictionary it was registered in (and from the
    ``extra_dict`` dictionaries, e.g. the set of hooks taking keyword arguments)."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)
        else:
            self.extra_dict_ref = ()

    def remove(self):
        for ref in (self.hooks_dict_ref,) + tuple(self.extra_dict_ref):
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extra = state[2] if len(state) > 2 and state[2] is not None else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def unserializable_hook(f):
    """Mark ``f`` as a hook that is not serialized (accepted for compatibility)."""
    f.__torch_unserializable__ = True
    return f
