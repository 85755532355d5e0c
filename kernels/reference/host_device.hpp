#pragma once
// Lets one inline function serve both the CUDA kernels and their CPU references, so the two draw
// the same input patterns and dropout masks bit for bit.
#if defined(__CUDACC__)
#define TRAINSIM_HD __host__ __device__
#else
#define TRAINSIM_HD
#endif
