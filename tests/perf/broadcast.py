"""Time elementwise ops over broadcast inputs on a CUDA GPU: the op against eager PyTorch,
torch.compile and a plain copy of the output's size, side by side in one run.

Each case reads its full-size input once and the broadcast one (a row, a per-channel
scale) through its strides, and writes the output once: a copy's bytes. Medians of single
calls between two CUDA events, after a warm-up, rotating over several input sets so that
no case runs from the cache.

    python tests/perf/broadcast.py   # with reference_ops/{fused_axpby,silu_mul} installed
"""

from __future__ import annotations

import statistics

import torch

SETS = 3  # input sets rotated through, each larger than the L2 cache


def median_us(fn, sets: list, reps: int = 60) -> float:
    for args in sets * 3:
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for rep in range(reps):
        args = sets[rep % len(sets)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def make(shape, dtype, channels_last=False, grad=False):
    t = torch.randn(shape, device="cuda", dtype=dtype)
    if channels_last:
        t = t.contiguous(memory_format=torch.channels_last)
    return t.requires_grad_(grad)


def main() -> None:
    import fused_axpby
    import silu_mul

    def axpby_eager(x, b):
        return 1.5 * x + b

    def silu_mul_eager(x, y):
        return torch.nn.functional.silu(x) * y

    axpby = lambda x, b: fused_axpby.fused_axpby(1.5, x, b)  # noqa: E731
    mul = silu_mul.silu_mul
    cases = [
        # name, op, eager, full shape, broadcast shape, channels_last, broadcast one first
        ("axpby bias rows", axpby, axpby_eager, (16384, 4096), (4096,), False, False),
        ("silu_mul bias rows", mul, silu_mul_eager, (16384, 4096), (4096,), False, False),
        ("silu_mul row first", mul, silu_mul_eager, (16384, 4096), (4096,), False, True),
        ("silu_mul odd rows", mul, silu_mul_eager, (16384, 4095), (4095,), False, False),
        ("silu_mul channel", mul, silu_mul_eager, (64, 256, 64, 64), (256, 1, 1), False, False),
        ("silu_mul channel 14x14", mul, silu_mul_eager, (1024, 256, 14, 14), (256, 1, 1), False, False),
        ("silu_mul channel NHWC", mul, silu_mul_eager, (64, 256, 64, 64), (256, 1, 1), True, False),
    ]
    forward_only = ("silu_mul odd rows", "silu_mul channel 14x14", "axpby bias rows")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("medians in us; ratios: op time / other's time (below 1: the op is faster)")
    columns = ["case", "dtype", "pass", "op", "eager", "compile", "copy", "op/eager", "op/comp", "op/copy"]
    header = " ".join(f"{c:>{24 if i == 0 else 8}}" for i, c in enumerate(columns))
    print(header)
    for name, op, eager, full, small, channels_last, first in cases:
        for dtype in (torch.float32, torch.bfloat16):
            def inputs(grad=False, full=full, small=small, dtype=dtype, nhwc=channels_last, first=first):
                big, little = make(full, dtype, nhwc, grad), make(small, dtype, False, grad)
                return (little, big) if first else (big, little)

            sets = [inputs() for _ in range(SETS)]
            out = op(*sets[0])
            copy_sets = [(torch.empty_like(out), torch.randn_like(out)) for _ in range(SETS)]
            copy = median_us(lambda dst, src: dst.copy_(src), copy_sets)
            torch._dynamo.reset()
            compiled = torch.compile(eager)
            row = {
                "op": median_us(op, sets),
                "eager": median_us(eager, sets),
                "compile": median_us(compiled, sets),
            }
            print(f"{name:>24} {str(dtype)[6:]:>8} {'fwd':>7} {row['op']:8.1f} {row['eager']:8.1f} "
                  f"{row['compile']:8.1f} {copy:8.1f} {row['op'] / row['eager']:8.2f} "
                  f"{row['op'] / row['compile']:8.2f} {row['op'] / copy:8.2f}", flush=True)
            if name not in forward_only:
                grad_sets = [inputs(grad=True) for _ in range(SETS)]
                grad_out = torch.randn_like(out)

                def step(fn, grad_out=grad_out):
                    return lambda *args: torch.autograd.grad(fn(*args), args, grad_out)

                torch._dynamo.reset()
                compiled = torch.compile(eager)
                row = {
                    "op": median_us(step(op), grad_sets),
                    "eager": median_us(step(eager), grad_sets),
                    "compile": median_us(step(compiled), grad_sets),
                }
                print(f"{name:>24} {str(dtype)[6:]:>8} {'fwd+bwd':>7} {row['op']:8.1f} "
                      f"{row['eager']:8.1f} {row['compile']:8.1f} {'':>8} "
                      f"{row['op'] / row['eager']:8.2f} {row['op'] / row['compile']:8.2f}", flush=True)


if __name__ == "__main__":
    main()
