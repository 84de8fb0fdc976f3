"""Every spelling of a formula computes the same: random formulas over tensors and int, float
and bool scalars, their C++ compiled against a rendered project's own math header and run on a
grid of values,
- against their PyTorch twins (the generated tests' default reference) in float64: where the
  twin reads a formula otherwise than C++ (`(x > 0) - (x < 0)` raised in torch, `k && 2` was 2
  in Python, `!(a && b)` lost its parentheses), the user's tests fail for an op that is right;
- on Lanes (csrc/cpu_lanes.h, the CPU loops' vectors: 8 doubles or 16 floats with AVX2)
  against the same C++ on one value at a time: where they differ, the CPU computes another op
  than CUDA (`c ? x <= 3 : 4` gave 1 for the 4 on Lanes, whose comparisons are masks);
- compiled by nvcc for the GPU, in float and double: a formula opgen accepts must build
  (`clamp(pow(x, 2), 0, 1)` did not: CUDA's pow(float, int) was a double).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess

import pytest
import torch

from opgen.cpp_expression import BOOL, FLOAT, INT, ExpressionError, parse

from .conftest import HAS_NVCC, render

NAMES = {"x": FLOAT, "y": FLOAT, "a": FLOAT, "k": INT, "flag": BOOL}
TENSORS = {"x", "y"}
SIGNATURE = "x: Tensor, y: Tensor, a: float = 0.5, k: int = 2, flag: bool = True"
LEAVES = ["x", "y", "a", "k", "flag", "0", "1", "2", "0.5", "3", "1e-3", "2.5f", "0x10"]
BINARY = ["+", "-", "*", "/", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "&", "|", "^", "%"]
# Not rsqrt and copysign: of a signed zero or a NaN (fmax(-0.0, 0.0), sqrt(-1)), C and torch
# may return either sign, as IEEE allows, and these two show it.
ONE_ARGUMENT = ["exp", "abs", "fabs", "floor", "ceil", "sqrt", "tanh", "log1p", "trunc", "rint", "sin",
                "expm1", "erf", "exp2"]
TWO_ARGUMENTS = ["min", "max", "fmax", "fmin", "pow", "fmod", "atan2", "hypot"]
XS = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0]
YS = [0.5, 2.0, -1.0, 0.0, -3.0, 1.0, 0.25, -0.5]
SCALARS = [(0.5, 2, True), (-1.5, -3, False), (0.0, 0, True)]  # a, k, flag
# The grid as C++ arrays, for the programs below.
GRID = "\n".join([
    f"const double xs[] = {{{', '.join(map(str, XS))}}};",
    f"const double ys[] = {{{', '.join(map(str, YS))}}};",
    f"const double as[] = {{{', '.join(str(a) for a, _, _ in SCALARS)}}};",
    f"const int64_t ks[] = {{{', '.join(str(k) for _, k, _ in SCALARS)}}};",
    f"const bool flags[] = {{{', '.join(str(f).lower() for _, _, f in SCALARS)}}};",
])


def random_formula(rng: random.Random, depth: int) -> str:
    """A C++ expression of every operator and function opgen takes, parenthesized at random
    depths (so that C++'s precedence decides some of it)."""
    if depth <= 0 or rng.random() < 0.25:
        return rng.choice(LEAVES)
    pick = rng.random()
    if pick < 0.45:
        return f"({random_formula(rng, depth - 1)} {rng.choice(BINARY)} {random_formula(rng, depth - 1)})"
    if pick < 0.55:  # with parentheses around its operand or without (`- -x`: two tokens)
        operand = random_formula(rng, depth - 1)
        return f"{rng.choice(['-', '!', '+', '~'])}{operand if rng.random() < 0.5 else f'({operand})'}"
    if pick < 0.65:
        parts = [random_formula(rng, depth - 1) for _ in range(3)]
        return f"({parts[0]} ? {parts[1]} : {parts[2]})"
    if pick < 0.8:
        return f"{rng.choice(ONE_ARGUMENT)}({random_formula(rng, depth - 1)})"
    if pick < 0.95:
        first, second = (random_formula(rng, depth - 1) for _ in range(2))
        return f"{rng.choice(TWO_ARGUMENTS)}({first}, {second})"
    return f"clamp({', '.join(random_formula(rng, depth - 1) for _ in range(3))})"


def accepted_formulas(count: int, seed: int) -> list:
    """`count` formulas that read x, that opgen accepts and writes a PyTorch twin for."""
    rng = random.Random(seed)
    formulas = []
    while len(formulas) < count:
        text = random_formula(rng, rng.randint(1, 4))
        try:
            formula = parse(text, NAMES, TENSORS)
        except ExpressionError:
            continue
        if formula.torch is not None and "x" in formula.used:
            formulas.append((text, formula))
    return formulas


def cpp_values(project, formulas) -> list[float]:
    """Each formula's C++ on the grid, through the project's math header (its min, max, clamp,
    divide, where and pow), in the order: scalars, then x and y, then formula."""
    functions = "\n".join(f"double f{i}(acc_t x, acc_t y, acc_t a, int64_t k, bool flag) {{ "
                          f"return {f.cpp}; }}"
                          for i, (_, f) in enumerate(formulas))
    calls = "\n".join(f'      std::printf("%.17g\\n", twin::f{i}(xs[j], ys[j], as[s], ks[s], flags[s]));'
                      for i in range(len(formulas)))
    grid = GRID
    source = project / "twins.cpp"
    source.write_text(f"""#include <cstdio>
#include "csrc/twin_math.h"
namespace twin {{
using acc_t = double;
{functions}
}}  // namespace twin
int main() {{
{grid}
  for (int s = 0; s < {len(SCALARS)}; ++s)
    for (int j = 0; j < {len(XS)}; ++j) {{
{calls}
    }}
}}
""")
    compiler = shutil.which("c++") or shutil.which("g++")
    built = subprocess.run([compiler, "-std=c++17", "-O0", "-w", str(source), "-o", str(project / "twins")],
                           capture_output=True, text=True, cwd=project)
    assert built.returncode == 0, built.stderr[-3000:]
    run = subprocess.run([str(project / "twins")], capture_output=True, text=True, check=True)
    return [float(v) for v in run.stdout.split()]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_pytorch_twin_of_a_random_formula_computes_what_its_cpp_computes(tmp_path, seed):
    formulas = accepted_formulas(250, seed)
    project = render(tmp_path, "twin", "--signature", SIGNATURE, "--forward", "x", "--no-backward")
    values = cpp_values(project, formulas)
    x, y = torch.tensor(XS, dtype=torch.float64), torch.tensor(YS, dtype=torch.float64)
    wrong = []
    for s, (a, k, flag) in enumerate(SCALARS):
        for i, (text, formula) in enumerate(formulas):
            cpp = torch.tensor([values[(s * len(XS) + j) * len(formulas) + i] for j in range(len(XS))],
                               dtype=torch.float64)
            try:
                twin = eval(formula.torch, {"x": x, "y": y, "a": a, "k": k, "flag": flag, "torch": torch})
            except ZeroDivisionError:  # an integer divided by 0: undefined in C++ too
                continue
            except Exception as error:  # the twin must run: any error is what this test finds
                wrong.append(f"{text}: its twin {formula.torch} raised {type(error).__name__}: {error}")
                continue
            twin = torch.as_tensor(twin, dtype=torch.float64).expand_as(x)
            same = torch.isclose(twin, cpp, rtol=1e-12, atol=0.0, equal_nan=True)
            if not same.all():
                j = int((~same).nonzero()[0])
                wrong.append(f"{text} at x={XS[j]}, y={YS[j]}, a={a}, k={k}, flag={flag}: "
                             f"C++ {cpp[j].item()}, its twin {formula.torch} {twin[j].item()}")
    assert not wrong, "\n".join(wrong[:10])


def lanes_program(project, formulas) -> str:
    """A program that prints each formula's Lanes values where they differ from its scalar
    values (float: beyond 1e-5 relative, at::vec's erf and exp against the C library's)."""
    functions = "\n".join(f"template <typename acc_t>\n"
                          f"acc_t f{i}(acc_t x, acc_t y, acc_t a, int64_t k, bool flag) {{ return {f.cpp}; }}"
                          for i, (_, f) in enumerate(formulas))
    checks = "\n".join(f"  check({i}, [](auto x, auto y, auto a, int64_t k, bool flag) "
                       f"{{ return twin::f{i}(x, y, a, k, flag); }});" for i in range(len(formulas)))
    return f"""#include "csrc/cpu_lanes.h"  // first: it makes the file AVX2 code
#include <cmath>
#include <cstdio>
#include "csrc/twin_math.h"
namespace twin {{
{functions}
}}  // namespace twin
{GRID}
template <typename T, typename F>
void check_in(int formula, F f, double tolerance) {{
  using L = CpuVec::Lanes<T>;
  T x[64], y[64], out[64];
  for (int j = 0; j < L::size(); ++j) x[j] = T(xs[j % {len(XS)}]), y[j] = T(ys[j % {len(XS)}]);
  for (int s = 0; s < {len(SCALARS)}; ++s) {{
    const L a(T(as[s]));
    const L x_lanes = CpuVec::load<T>(x, 1, L::size()), y_lanes = CpuVec::load<T>(y, 1, L::size());
    CpuVec::store(out, f(x_lanes, y_lanes, a, ks[s], flags[s]), L::size());
    for (int j = 0; j < L::size(); ++j) {{
      const T one = f(x[j], y[j], T(as[s]), ks[s], flags[s]);
      if (!(one == out[j] || (one != one && out[j] != out[j]) ||
            std::fabs(double(one) - double(out[j])) <= tolerance * std::fabs(double(one))))
        std::printf("%d %d %d %.17g %.17g\\n", formula, s, j, double(out[j]), double(one));
    }}
  }}
}}
template <typename F>
void check(int formula, F f) {{
  check_in<double>(formula, f, 1e-12);
  check_in<float>(formula, f, 1e-5);
}}
int main() {{
{checks}
}}
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="csrc/cpu_lanes.h's vectors are x86's AVX2")
def test_a_random_formula_on_the_cpus_vectors_computes_what_it_computes_one_value_at_a_time(tmp_path):
    formulas = accepted_formulas(250, 3)
    project = render(tmp_path, "twin", "--signature", SIGNATURE, "--forward", "x", "--no-backward")
    (project / "lanes.cpp").write_text(lanes_program(project, formulas))
    torch_dir = os.path.dirname(torch.__file__)
    include, lib = os.path.join(torch_dir, "include"), os.path.join(torch_dir, "lib")
    compiler = shutil.which("c++") or shutil.which("g++")
    built = subprocess.run([compiler, "-std=c++17", "-O1", "-w", f"-I{include}", "lanes.cpp", "-o", "lanes",
                            f"-L{lib}", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{lib}"],
                           capture_output=True, text=True, cwd=project)
    assert built.returncode == 0, built.stderr[-3000:]
    run = subprocess.run(["./lanes"], capture_output=True, text=True, cwd=project, check=True)
    wrong = []
    for line in run.stdout.splitlines():
        formula, s, j, lanes, one = line.split()
        a, k, flag = SCALARS[int(s)]
        text, written = formulas[int(formula)]
        wrong.append(f"{text} ({written.cpp}) at x={XS[int(j) % len(XS)]}, a={a}, k={k}, flag={flag}: "
                     f"{lanes} on Lanes, {one} one value at a time")
    assert not wrong, "\n".join(wrong[:10])


@pytest.mark.skipif(not HAS_NVCC, reason="no nvcc to compile the formulas' CUDA with")
def test_a_random_formula_compiles_for_the_gpu_in_float_and_double(tmp_path):
    formulas = accepted_formulas(300, 1)
    project = render(tmp_path, "twin", "--signature", SIGNATURE, "--forward", "x", "--no-backward")
    functions = "\n".join(f"template <typename acc_t>\n"
                          f"__device__ acc_t f{i}(acc_t x, acc_t y, acc_t a, int64_t k, bool flag) "
                          f"{{ return {f.cpp}; }}" for i, (_, f) in enumerate(formulas))
    calls = "\n".join(f"  out[{i}] = twin::f{i}<float>(x[0], x[1], a, k, flag);\n"
                       f"  out_double[{i}] = twin::f{i}<double>(x_double[0], x_double[1], a, k, flag);"
                       for i in range(len(formulas)))
    (project / "formulas.cu").write_text(f"""#include <cstdint>
#include "csrc/twin_math.h"
namespace twin {{
{functions}
}}  // namespace twin
__global__ void formulas(const float* x, const double* x_double, float* out, double* out_double, float a,
                         int64_t k, bool flag) {{
{calls}
}}
""")
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    # As the generated setup.py passes them to nvcc (--expt-relaxed-constexpr: std's constexpr
    # math on the device).
    built = subprocess.run([nvcc, "-c", "-std=c++17", "-arch=sm_90", "--expt-relaxed-constexpr",
                            "formulas.cu", "-o", "formulas.o"], capture_output=True, text=True, cwd=project)
    assert built.returncode == 0, built.stderr[-3000:]
