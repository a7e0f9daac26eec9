"""torch.nn.modules: every layer, container, activation and loss module (torch's layout:
module.py, container.py, linear.py, conv.py, pooling.py, batchnorm.py, normalization.py,
dropout.py, rnn.py, activation.py, loss.py, transformer.py, sparse.py ...)."""
from .module import Module  # noqa: F401
from ._buffer import Buffer  # noqa: F401
from .container import (Container, ModuleDict, ModuleList, ParameterDict,  # noqa: F401
                        ParameterList, Sequential)
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,  # noqa: F401
                      AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, LPPool1d, LPPool2d, MaxPool1d,
                      MaxPool2d, MaxUnpool1d, MaxUnpool2d)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
from .normalization import (CrossMapLRN2d, GroupNorm, LayerNorm, LocalResponseNorm,  # noqa: F401
                            RMSNorm)
from .dropout import (AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d,  # noqa: F401
                      FeatureAlphaDropout)
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .activation import (CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid,  # noqa: F401
                         Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
                         MultiheadAttention, PReLU, ReLU, ReLU6, RReLU, Sigmoid, SiLU, Softmax,
                         Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink,
                         Threshold)
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss,  # noqa: F401
                   CrossEntropyLoss, CTCLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss,
                   KLDivLoss, L1Loss, MarginRankingLoss, MSELoss, MultiLabelMarginLoss,
                   MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, NLLLoss2d, PoissonNLLLoss,
                   SmoothL1Loss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .transformer import (Transformer, TransformerDecoder,  # noqa: F401
                          TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from .padding import (CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d,  # noqa: F401
                      ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d,
                      ZeroPad1d, ZeroPad2d)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .pixelshuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle  # noqa: F401
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401

__all__ = sorted(n for n in dir() if n[0].isupper())
