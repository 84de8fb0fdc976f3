# one process: times ours (the OpOverload's _op) and eager at each size; prints min-of-blocks in us
import sys, time, torch
sys.path.insert(0, sys.argv[1]); import vector_add
torch.set_num_threads(1)
op = torch.ops.vector_add.vector_add.default._op
dt = {"f32": torch.float32, "bf16": torch.bfloat16}[sys.argv[2]]
out = []
for k in [12, 14, 15, 16, 17, 18, 20, 22]:
    n = 1 << k; a = torch.randn(n, dtype=dt); b = torch.randn(n, dtype=dt)
    reps = max(20, min(20000, (1 << 26) // n))
    best = {}
    for f, name in ((op, "ours"), (torch.add, "eager")):
        ts = []
        for _ in range(5):
            s = time.perf_counter_ns()
            for _ in range(reps): f(a, b)
            ts.append((time.perf_counter_ns() - s) / reps / 1e3)
        best[name] = min(ts)
    out.append(f"2^{k} {best['ours']:.2f} {best['eager']:.2f}")
print(" | ".join(out))
