"""Tensor and Node hooks (placeholder module; filled in by the autograd work)."""
