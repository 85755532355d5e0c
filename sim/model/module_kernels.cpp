#include "model/module_kernels.hpp"

namespace trainsim::model {

namespace {
constexpr double kBf16 = 2.0;
}  // namespace

Operation bias_grad_reduction(const std::string& name, double rows, double cols) {
  return make_elementwise(name, kBf16 * (rows * cols + cols), rows * cols, "bias_grad");
}

Operation chunk_grad_cat(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, 0, "chunk_grad_cat");
}

Operation wide_chunk_grad_cat(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, 0, "chunk_grad_cat_wide");
}

Operation permute_copy(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, 0, "permute_copy");
}

Operation scalar_multiply(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, elements, "scalar_multiply");
}

Operation unpad_gather(const std::string& name, double elements) {
  return make_elementwise(name, 2 * kBf16 * elements, 0, "index_gather");
}

std::vector<Operation> unpad_index_ops(const std::string& name, double batch, double seq) {
  constexpr double kMask = 1, kInt32 = 4, kInt64 = 8;
  const double tokens = batch * seq;
  std::vector<Operation> ops{
      make_elementwise(name + "_mask_to_int32", tokens * (kMask + kInt32)),
      make_elementwise(name + "_seqlens_sum", tokens * kInt32 + batch * kInt32),
      make_elementwise(name + "_nonzero_count_tiles", tokens * kMask),
      make_elementwise(name + "_nonzero_count", kInt32),
      make_elementwise(name + "_nonzero_select_init", 0),
      make_elementwise(name + "_nonzero_select", tokens * (kMask + kInt64)),
      make_elementwise(name + "_seqlens_max", batch * kInt32),
      make_elementwise(name + "_cumsum_init", 0),
      make_elementwise(name + "_cumsum", 2 * batch * kInt32),
      make_elementwise(name + "_pad_fill", (batch + 1) * kInt32),
      make_elementwise(name + "_pad_copy", 2 * batch * kInt32),
  };
  ops[3].host_sync_after = true;  // torch.nonzero: the count, for the output's size
  ops[6].host_sync_after = true;  // .item() on the longest sequence
  return ops;
}

namespace {
// A zero-filled tensor, then `elements` values written into it at indices (scatter_ or
// index_put_): both flash-attn padding directions.
std::vector<Operation> index_write_into_zeros(const std::string& name, const std::string& write, double elements) {
  return {make_elementwise(name + "_zeros", kBf16 * elements, 0, "zeros_fill"),
          make_elementwise(name + write, 2 * kBf16 * elements, 0, "index_scatter")};
}
}  // namespace

std::vector<Operation> unpad_gather_grad(const std::string& name, double elements) {
  return index_write_into_zeros(name, "_scatter", elements);
}

std::vector<Operation> pad_index_put(const std::string& name, double elements) {
  return index_write_into_zeros(name, "_index_put", elements);
}

Operation pad_index_put_grad(const std::string& name, double elements) { return unpad_gather(name, elements); }

}  // namespace trainsim::model
