"""torch.utils.data: datasets, samplers, DataLoader, default_collate."""
from . import _utils  # noqa: F401
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset,  # noqa: F401
                      StackDataset, Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,  # noqa: F401
                      SubsetRandomSampler, WeightedRandomSampler)
from .dataloader import (DataLoader, default_collate, default_convert,  # noqa: F401
                         get_worker_info)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "default_collate", "default_convert", "get_worker_info", "random_split"]
