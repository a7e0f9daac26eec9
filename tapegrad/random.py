"""torch.random: the default CPU generator's seeding and state (the same functions as
torch.manual_seed & co.) and ``fork_rng``."""
import contextlib

from .creation import (default_generator, get_rng_state, initial_seed, manual_seed, seed,
                       set_rng_state)

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed",
           "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Restore the default generator's state (its stream and cached normal) on exit."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
