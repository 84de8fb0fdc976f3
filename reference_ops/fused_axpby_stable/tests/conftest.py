"""What the tests of every op in this package share: the devices, and how close is close.

Each op's tests (tests/test_<op>.py) import these; pytest also loads this file first.
"""

import pytest
import torch

# Every test that takes a device runs on the CPU and, where a GPU is visible, on CUDA.
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

needs_cuda = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU, and none is visible"
)

# (first tensor's device, another tensor's device) for the mixed-device checks: meta
# tensors reach an op's fake kernel, CUDA ones the checks of its C++ glue.
MIXED_DEVICES = [
    ("cpu", "meta"),
    pytest.param("cuda", "cpu", marks=needs_cuda),
    pytest.param("cpu", "cuda", marks=needs_cuda),
]

# Allowed difference of one computed element from the float64 reference: a few units in
# the last place of each dtype (kernels compute in float and round once; the reference
# rounds once too).
TOLERANCES = {
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.float32: dict(rtol=2e-5, atol=1e-6),
    torch.float16: dict(rtol=2e-3, atol=1e-4),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-3),
    # Integer outputs: the kernels truncate a float result, which can land one below a
    # float64 reference that sits on an integer.
    torch.uint8: dict(rtol=0, atol=1),
    torch.uint16: dict(rtol=0, atol=1),
    torch.int32: dict(rtol=0, atol=1),
}
