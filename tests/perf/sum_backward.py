"""Time `op(x).sum().backward()` on small CUDA tensors: the op against eager PyTorch.

The gradient that sum() sends back is one value expanded to the output's shape (every
stride 0); a backward that copies it out first pays a kernel for it. Medians of single
calls between two CUDA events, after a warm-up.

    python tests/perf/sum_backward.py   # with reference_ops/{relu,vector_add,fused_axpby} installed
"""

import statistics

import torch


def median_us(fn, reps: int = 300) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def main() -> None:
    import fused_axpby
    import relu
    import vector_add

    n = 1 << 16
    x, y = (torch.randn(n, device="cuda", requires_grad=True) for _ in range(2))
    cases = {
        "relu": (lambda: relu.relu(x), lambda: torch.clamp(x, min=0)),
        "vector_add": (lambda: vector_add.vector_add(x, y), lambda: x + y),
        "fused_axpby": (lambda: fused_axpby.fused_axpby(1.5, x, y), lambda: 1.5 * x + y),
    }
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: op(x).sum().backward(), 2^16 float32")
    for name, (op, eager) in cases.items():
        ours = median_us(lambda op=op: op().sum().backward())
        theirs = median_us(lambda eager=eager: eager().sum().backward())
        print(f"{name:>12}: op {ours:6.1f} us, eager {theirs:6.1f} us, op / eager {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
