"""erf of float Lanes (a generated project's csrc/cpu_lanes.h, the CPU loops' vectors) against
the C library's erf in double, on every 61st positive float and its negative, and on NaN,
infinities, signed zeros and denormals: within 2 ulp and 1e-7 everywhere, odd, NaN kept.

at::vec's erf, which the vectors called before, fails this: 5.6e-7 off near x = 0.03 (its
1 - t * p(t) * exp(-x^2) cancels there), and 0 for the smallest floats.
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

// How far got is from erf(x) in double: in units of the float spacing at the true value.
double ulps(float x, float got) {
  const double truth = std::erf(double(x));
  const float rounded = float(truth);
  const double spacing = std::fabs(double(std::nextafter(rounded, INFINITY)) - double(rounded));
  return std::fabs(double(got) - truth) / (rounded == 0 ? 1.4e-45 : spacing);
}

int main() {
  double worst_ulps = 0, worst_abs = 0;
  float worst_ulps_at = 0, worst_abs_at = 0;
  float in[64], out[64], out_negated[64];
  const uint32_t infinity = 0x7f800000u;
  for (uint64_t bits = 0; bits <= infinity;) {
    for (int j = 0; j < L::size(); ++j, bits += 61) in[j] = from_bits(uint32_t(std::min<uint64_t>(bits, infinity)));
    const L x = CpuVec::load<float>(in, 1, L::size());
    CpuVec::store(out, erf(x), L::size());
    CpuVec::store(out_negated, erf(-x), L::size());
    for (int j = 0; j < L::size(); ++j) {
      if (out_negated[j] != -out[j] || std::signbit(out_negated[j]) == std::signbit(out[j]))
        std::printf("odd %.9g: erf %.9g, of -x %.9g\n", in[j], out[j], out_negated[j]);
      const double off = std::fabs(double(out[j]) - std::erf(double(in[j])));
      if (ulps(in[j], out[j]) > worst_ulps) worst_ulps = ulps(in[j], out[j]), worst_ulps_at = in[j];
      if (off > worst_abs) worst_abs = off, worst_abs_at = in[j];
    }
  }
  const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1e-40f, 3.92f, 4.0f};
  for (int j = 0; j < L::size(); ++j) in[j] = special[j % 10];
  CpuVec::store(out, erf(CpuVec::load<float>(in, 1, L::size())), L::size());
  for (int j = 0; j < 10; ++j) {
    const float libm = std::erf(in[j]);
    if (!(out[j] == libm && std::signbit(out[j]) == std::signbit(libm)) && !(out[j] != out[j] && libm != libm))
      std::printf("special %.9g: %.9g, the C library %.9g\n", in[j], out[j], libm);
  }
  // Last: the sweep's worst.
  std::printf("worst %.3f ulp at %.9g, %.3g at %.9g\n", worst_ulps, worst_ulps_at, worst_abs,
              worst_abs_at);
}
"""


def has_avx512() -> bool:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return all(f" {flag}" in flags for flag in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="csrc/cpu_lanes.h's vectors are x86's AVX2 and AVX512")
def test_erf_of_float_lanes_is_within_two_ulp_of_the_c_librarys_for_every_61st_float(tmp_path):
    project = render(tmp_path, "erfl", "--signature", "x: Tensor", "--forward", "erf(x)", *LIGHT_OP)
    (project / "erf_lanes.cpp").write_text(PROGRAM)
    torch_dir = os.path.dirname(torch.__file__)
    include, lib = os.path.join(torch_dir, "include"), os.path.join(torch_dir, "lib")
    compiler = shutil.which("c++") or shutil.which("g++")
    # AVX2 runs on every x86-64 machine CI has; AVX512 runs where the processor has it and is
    # compiled everywhere.
    for isa, define in (("avx2", []), ("avx512", ["-DCPU_LANES_AVX512"])):
        built = subprocess.run([compiler, *define, "-std=c++17", "-O2", "-w", f"-I{include}", "erf_lanes.cpp",
                                "-o", f"erf_{isa}", f"-L{lib}", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{lib}"],
                               capture_output=True, text=True, cwd=project)
        assert built.returncode == 0, built.stderr[-3000:]
        if isa == "avx512" and not has_avx512():
            continue
        run = subprocess.run([f"./erf_{isa}"], capture_output=True, text=True, cwd=project, check=True)
        *complaints, summary = run.stdout.splitlines()
        assert not complaints, f"{isa}: " + "\n".join(complaints[:10])
        worst_ulps, worst_abs = float(summary.split()[1]), float(summary.split()[5])
        assert worst_ulps <= 2 and worst_abs <= 1e-7, f"{isa}: {summary}"
