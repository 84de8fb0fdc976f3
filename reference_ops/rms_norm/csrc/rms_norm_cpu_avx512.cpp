// rms_norm_cpu_avx512.cpp: the loops of csrc/rms_norm_cpu_loops.h built for processors with
// AVX512, 32 floats (16 doubles) at a time.
// clang-format off
#define CPU_LANES_AVX512
#include "cpu_lanes.h"  // first, before any other header: it makes the file AVX512 code
// clang-format on

#include "rms_norm_cpu_loops.h"
