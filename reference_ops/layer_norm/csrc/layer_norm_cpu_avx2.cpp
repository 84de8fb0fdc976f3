// layer_norm_cpu_avx2.cpp: the loops of csrc/layer_norm_cpu_loops.h built for processors with
// AVX2, 16 floats (8 doubles) at a time.
// clang-format off
#include "cpu_lanes.h"  // first, before any other header: it makes the file AVX2 code
// clang-format on

#include "layer_norm_cpu_loops.h"
