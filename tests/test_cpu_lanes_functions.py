"""The math functions a generated project's csrc/cpu_lanes.h computes itself for float Lanes
(the CPU loops' vectors), against the C library's in double, on every 61st float of either
sign and on NaN, infinities, signed zeros, denormals and the ends of their ranges:

- erf: within 2 ulp and 1e-7 everywhere, odd. at::vec's erf, which the vectors called before,
  fails this: 5.6e-7 off near x = 0.03 (its 1 - t * p(t) * exp(-x^2) cancels there), and 0 for
  the smallest floats.
- exp: within 1.5 ulp, denormal results included (SLEEF's, which the vectors called before,
  is within 0.98; this one 1.01), and the C library's own values at the ends of its range.
- tanh: within 1.5 ulp (SLEEF's: 1.0; this one 1.33), odd, and 1 where e^2|x| overflows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from .conftest import LIGHT_OP, render

PROGRAM = r"""
#include "csrc/cpu_lanes.h"  // first: it makes the file vector code
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

using L = CpuVec::Lanes<float>;

float from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// How far got is from the truth (a double): in units of the float spacing there.
double ulps(double truth, float got) {
  const float rounded = float(truth);
  if (std::isinf(rounded)) return got == rounded ? 0 : INFINITY;
  const double spacing = std::fabs(double(std::nextafter(rounded, INFINITY)) - double(rounded));
  return std::fabs(double(got) - truth) / (rounded == 0 ? 1.4e-45 : spacing);
}

// Prints each complaint on a line of its own, then "worst <name> <ulp> ulp at <x>, <absolute
// error> at <x>".
template <typename OfLanes, typename OfDouble>
void sweep(const char* name, OfLanes of_lanes, OfDouble of_double, bool odd,
           std::initializer_list<float> special) {
  double worst_ulps = 0, worst_abs = 0;
  float worst_ulps_at = 0, worst_abs_at = 0;
  float in[64], out[64], out_negated[64];
  const uint32_t infinity = 0x7f800000u;
  for (uint64_t bits = 0; bits <= infinity;) {
    for (int j = 0; j < L::size(); ++j, bits += 61)
      in[j] = from_bits(uint32_t(std::min<uint64_t>(bits, infinity)));
    const L x = CpuVec::load<float>(in, 1, L::size());
    CpuVec::store(out, of_lanes(x), L::size());
    CpuVec::store(out_negated, of_lanes(-x), L::size());
    for (int j = 0; j < L::size(); ++j) {
      if (odd && (out_negated[j] != -out[j] || std::signbit(out_negated[j]) == std::signbit(out[j])))
        std::printf("%s not odd at %.9g: %.9g, of -x %.9g\n", name, in[j], out[j], out_negated[j]);
      for (const float x_j : {in[j], -in[j]}) {
        const float got = x_j == in[j] ? out[j] : out_negated[j];
        const double truth = of_double(double(x_j)), off = std::fabs(double(got) - truth);
        if (ulps(truth, got) > worst_ulps) worst_ulps = ulps(truth, got), worst_ulps_at = x_j;
        if (off > worst_abs && !std::isinf(float(truth))) worst_abs = off, worst_abs_at = x_j;
      }
    }
  }
  int count = 0;
  for (const float value : special) in[count++] = value;
  CpuVec::store(out, of_lanes(CpuVec::load<float>(in, 1, L::size())), L::size());
  for (int j = 0; j < count; ++j) {
    const float libm = float(of_double(double(in[j])));
    const bool same = out[j] == libm && std::signbit(out[j]) == std::signbit(libm);
    if (!same && !(out[j] != out[j] && libm != libm))
      std::printf("%s at %.9g: %.9g, the C library %.9g\n", name, in[j], out[j], libm);
  }
  std::printf("worst %s %.3f ulp at %.9g, %.3g at %.9g\n", name, worst_ulps, worst_ulps_at, worst_abs,
              worst_abs_at);
}

int main() {
  sweep("erf", [](const L& x) { return erf(x); }, [](double x) { return std::erf(x); }, true,
        {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-40f, 3.92f, 4.0f});
  // The largest float whose exp is finite (88.72283), the next; where results become denormal
  // (-87.33655) and round to 0 (-103.97208 and the next float down).
  sweep("exp", [](const L& x) { return exp(x); }, [](double x) { return std::exp(x); }, false,
        {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 88.72283f, 88.722839f, -87.33655f,
         -103.97208f, -103.972084f, -104.0f, -200.0f});
  // Past 9.01 tanh rounds to 1; past 44.4 e^2|x| overflows.
  sweep("tanh", [](const L& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, true,
        {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-45f, 9.1f, 44.0f, 45.0f, -100.0f});
}
"""

# The worst error each function may have: in ulp, and absolute where it means something.
LIMITS = {"erf": (2.0, 1e-7), "exp": (1.5, None), "tanh": (1.5, None)}


def has_avx512() -> bool:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return all(f" {flag}" in flags for flag in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))


@pytest.mark.skipif(os.uname().machine != "x86_64",
                    reason="csrc/cpu_lanes.h's vectors are x86's AVX2 and AVX512")
def test_erf_exp_and_tanh_of_float_lanes_are_within_their_ulp_of_the_c_library_on_every_61st_float(tmp_path):
    project = render(tmp_path, "lanesfn", "--signature", "x: Tensor",
                     "--forward", "erf(x) * exp(x) * tanh(x)", *LIGHT_OP)
    (project / "functions.cpp").write_text(PROGRAM)
    torch_dir = os.path.dirname(torch.__file__)
    include, lib = os.path.join(torch_dir, "include"), os.path.join(torch_dir, "lib")
    compiler = shutil.which("c++") or shutil.which("g++")
    # AVX2 runs on every x86-64 machine CI has; AVX512 runs where the processor has it and is
    # compiled everywhere.
    for isa, define in (("avx2", []), ("avx512", ["-DCPU_LANES_AVX512"])):
        built = subprocess.run([compiler, *define, "-std=c++17", "-O2", "-w", f"-I{include}", "functions.cpp",
                                "-o", f"functions_{isa}", f"-L{lib}", "-ltorch_cpu", "-lc10",
                                f"-Wl,-rpath,{lib}"], capture_output=True, text=True, cwd=project)
        assert built.returncode == 0, built.stderr[-3000:]
        if isa == "avx512" and not has_avx512():
            continue
        run = subprocess.run([f"./functions_{isa}"], capture_output=True, text=True, cwd=project, check=True)
        lines = run.stdout.splitlines()
        complaints = [line for line in lines if not line.startswith("worst ")]
        assert not complaints, f"{isa}: " + "\n".join(complaints[:10])
        summaries = {line.split()[1]: line for line in lines if line.startswith("worst ")}
        assert summaries.keys() == LIMITS.keys(), run.stdout
        for name, (ulp_limit, abs_limit) in LIMITS.items():
            words = summaries[name].split()
            worst_ulps, worst_abs = float(words[2]), float(words[6])
            assert worst_ulps <= ulp_limit, f"{isa}: {summaries[name]}"
            assert abs_limit is None or worst_abs <= abs_limit, f"{isa}: {summaries[name]}"
