"""Layer 3: the core. The grad_fn name registry (``names.py``) and the tape (``tape.py``: its
storage, recording contexts, the backward sweep and the replay). No Tensor methods, no op
families, no autograd API: what the sweep must call back into (hooks, custom Functions) is
registered here as data by the layers above (``tape.HOOKS``).
"""
