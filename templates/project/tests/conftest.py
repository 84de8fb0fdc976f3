"""What the tests of every op in this package share: the devices, how close is close, and
which random inputs each test draws.

Each op's tests (tests/test_<op>.py) import these; pytest also loads this file first.
"""

import contextlib
import zlib

import pytest
import torch


# Random inputs: each test draws its own, the same on every run.
def pytest_addoption(parser):
    parser.addoption(
        "--input-seed",
        type=int,
        default=0,
        help="draw other random inputs: each test seeds torch with its own id and this number "
        "(default 0), so a failure comes back when the test runs again with the same number",
    )


def pytest_report_header(config):
    return f"random inputs: each test's own, and --input-seed {config.getoption('input_seed')}"


@pytest.fixture(autouse=True)
def _inputs_seeded_by_the_test_id(request):
    """Seeds torch's generators (CPU and CUDA) from the test's file, name and parameters and
    --input-seed, so that a test draws the same inputs alone (pytest -k, a node id) as in the
    whole run, whatever ran before it and from whichever directory pytest runs."""
    test = f"{request.node.path.name}::{request.node.name}"
    torch.manual_seed(zlib.crc32(f"{request.config.getoption('input_seed')} {test}".encode()))


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
    torch.int8: dict(rtol=0, atol=1),
}

# A formula whose terms cancel ((x + y)^2 - x^2 - 2 x y; tanh GELU's gradient near x = -0.75)
# loses digits to float32's rounding that no kernel can keep: PyTorch's own float32 result
# misses the float64 reference as far. Where the reference computed in float32 misses it by
# more than TOLERANCES allow, an op may miss it by up to FLOAT_ERROR_FACTOR times as much.
FLOAT_ERROR_FACTOR = 16


def allowing_float_error(tolerance: dict, expected: torch.Tensor, in_float: torch.Tensor) -> dict:
    """tolerance, its atol raised to FLOAT_ERROR_FACTOR times the largest difference between
    in_float (the reference computed in float32, as the kernels compute) and expected (the
    reference in float64)."""
    error = (in_float.double() - expected.double()).abs()
    error = error[error.isfinite()]
    if error.numel() == 0:
        return tolerance
    return {**tolerance, "atol": max(tolerance["atol"], FLOAT_ERROR_FACTOR * error.max().item())}


# Rounding functions jump. Where a value an op rounds lies within float32's error of a jump
# (x * 127 / a: 28.4999999 in float32, 28.5000001 in float64), the kernel and the float64
# reference round it a step apart, and both are right. So where the reference calls
# torch.round, floor, ceil or trunc, assert_close_to_reference computes it again with each
# rounded value first moved down, then up, by the tolerance of the dtype the kernel computes
# in, and accepts an element anywhere between those two. A reference that rounds nothing is
# checked as before.
ROUNDING_FUNCTIONS = ("round", "floor", "ceil", "trunc")


@contextlib.contextmanager
def _rounding_moved(move):
    """torch's rounding functions and Tensor methods round value + move(value) (with move
    None: value); yields the list of the calls made of them."""
    calls = []

    def moved(function):
        def call(value, *args, **kwargs):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                calls.append(function)
                if move is not None:
                    value = value + move(value)
            return function(value, *args, **kwargs)

        return call

    # torch.Tensor's methods live on its base class: deleting the wrapper restores them.
    originals = [
        (owner, name, owner.__dict__.get(name), getattr(owner, name))
        for owner in (torch, torch.Tensor)
        for name in ROUNDING_FUNCTIONS
    ]
    try:
        for owner, name, _, function in originals:
            setattr(owner, name, moved(function))
        yield calls
    finally:
        for owner, name, own, _ in originals:
            if own is None:
                delattr(owner, name)
            else:
                setattr(owner, name, own)


def assert_close_to_reference(
    actual, reference, computed_in: torch.dtype, rtol: float, atol: float, in_float=None
) -> None:
    """torch.testing.assert_close(actual, reference(), rtol=rtol, atol=atol), except that
    where reference() rounds, an element may lie anywhere between its results with each rounded
    value first moved down and up by the tolerance of computed_in (float32 or float64: what
    the kernel computes in), and that where it rounds nothing, in_float() (the reference
    computed in float32; None: the kernels compute in float64) widens atol by its own error
    (allowing_float_error). NaN where reference() is NaN is a match, as in PyTorch's own
    tests of its ops (a row of one element that a formula divides by its range, 0 / 0)."""
    with _rounding_moved(None) as calls:
        expected = reference()
    if not calls and in_float is not None:
        atol = allowing_float_error(dict(rtol=rtol, atol=atol), expected, in_float())["atol"]
    if calls:
        around = [_reference_moved(reference, sign, TOLERANCES[computed_in]) for sign in (-1, 1)]
        low, high = torch.minimum(*around), torch.maximum(*around)
        slack = atol + rtol * torch.maximum(low.abs(), high.abs())
        between = (actual >= low - slack) & (actual <= high + slack)
        close = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        if bool((between | close).all()):
            return
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def _reference_moved(reference, sign: int, tolerance: dict):
    """reference() with each value it rounds first moved by sign times the tolerance."""
    rtol, atol = tolerance["rtol"], tolerance["atol"]
    with _rounding_moved(lambda value: sign * (rtol * value.abs() + atol)):
        return reference()
