#include "gemm_sweep.hpp"

#include <algorithm>

namespace trainsim::validate {

namespace {

void add(std::vector<GemmShape>& shapes, GemmShape s) {
  if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
}

/// A forward GEMM and its two backward forms (model/transformer.cpp, backward_of).
void add_with_backward(std::vector<GemmShape>& shapes, long m, long n, long k, long batch) {
  add(shapes, {m, n, k, batch});
  add(shapes, {m, k, n, batch});  // data gradient
  add(shapes, {k, n, m, batch});  // weight gradient
}

}  // namespace

std::vector<GemmShape> gemm_sweep_shapes(bool quick) {
  std::vector<GemmShape> shapes;
  const long max_square = quick ? 2048 : 16384;
  for (long s = 256; s <= max_square; s *= 2) add(shapes, {s, s, s, 1});

  // Hidden sizes other than the named models' (1024, 2304, 4096, 6144), so the layer check
  // interpolates between them.
  const std::vector<long> hidden =
      quick ? std::vector<long>{1536} : std::vector<long>{768, 1536, 3072, 5120, 8192};
  const std::vector<long> tokens =
      quick ? std::vector<long>{2048} : std::vector<long>{1024, 2048, 16384};
  for (long t : tokens)
    for (long h : hidden) {
      add_with_backward(shapes, t, 3 * h, h, 1);
      add_with_backward(shapes, t, h, h, 1);
      add_with_backward(shapes, t, 4 * h, h, 1);
      add_with_backward(shapes, t, h, 4 * h, 1);
    }

  // Attention: per (sequence, head) pair, scores S x S x d and context S x d x S, 96 pairs.
  const std::vector<long> seqs =
      quick ? std::vector<long>{256} : std::vector<long>{256, 1024, 4096};
  const std::vector<long> head_dims = quick ? std::vector<long>{64} : std::vector<long>{64, 128};
  const long pairs = 96;
  for (long s : seqs)
    for (long d : head_dims) {
      add_with_backward(shapes, s, s, d, pairs);
      add_with_backward(shapes, s, d, s, pairs);
    }
  return shapes;
}

std::vector<model::Dtype> gemm_sweep_dtypes() {
  return {model::Dtype::bf16, model::Dtype::fp16, model::Dtype::tf32, model::Dtype::fp32};
}

double gemm_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(s.batch);
}

}  // namespace trainsim::validate
