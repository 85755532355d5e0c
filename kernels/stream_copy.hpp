#pragma once
// The two device constants the cost model needs besides GEMMs: achieved streaming bandwidth (a
// copy kernel, 16-byte loads and stores) and the per-kernel cost (an empty kernel launched back to
// back: what a kernel boundary costs on one stream, launch plus drain).
#include <cuda_runtime_api.h>

#include <cstddef>

namespace trainsim::kernels {

/// dst[i] = src[i] for `bytes` bytes (a multiple of 16, buffers 16-byte aligned).
void stream_copy(const void* src, void* dst, std::size_t bytes, cudaStream_t stream);
/// One launch of a kernel that does nothing (1 block, 32 threads).
void empty_kernel(cudaStream_t stream);

}  // namespace trainsim::kernels
