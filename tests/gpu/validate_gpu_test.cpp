// The GPU transformer layer of `trainsim-validate layer`: its forward pass against the CPU
// reference, and its kernels named as the simulator's operations. Skipped, with the reason,
// where there is no CUDA device.
#include <algorithm>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "support/cuda_device.hpp"

#include "cuda_stream.hpp"
#include "gpu_layer.hpp"
#include "model/transformer.hpp"

using namespace trainsim;

namespace {

model::TransformerSpec small_spec() {
  model::TransformerSpec s;
  s.name = "small";
  s.layers = 1;
  s.hidden = 256;
  s.heads = 4;
  s.ffn_hidden = 1024;
  s.seq_len = 64;
  return s;
}

}  // namespace

TEST(GpuLayer, ForwardMatchesCpuReference) {
  REQUIRE_CUDA_DEVICE();
  kernels::CudaStream stream;
  kernels::CublasLt lt;
  EXPECT_LE(validate::verify_small_gpu_layer(lt, stream.get()), 1.0);
  const validate::GpuLayer layer(small_spec(), 3, lt, stream.get());
  EXPECT_LE(layer.verify_forward(), 1.0);
}

TEST(GpuLayer, KernelsAreTheSimulatorsOperationsInOrder) {
  REQUIRE_CUDA_DEVICE();
  kernels::CudaStream stream;
  kernels::CublasLt lt;
  const validate::GpuLayer layer(small_spec(), 2, lt, stream.get());
  std::vector<std::string> want;
  for (const auto& op : model::layer_forward_ops(small_spec(), 2)) want.push_back(op.name);
  for (const auto& op : model::layer_backward_ops(small_spec(), 2)) want.push_back(op.name);
  // The same operations, one kernel each; the GPU layer runs them in post-norm order, the
  // simulator lists them pre-norm, so compare them as sets.
  auto got = layer.kernel_names();
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  const auto times = layer.time_per_kernel(2);
  ASSERT_EQ(times.size(), want.size());
  for (const auto& [name, t] : times) EXPECT_GT(t, 0) << name;
}
