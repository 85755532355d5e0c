#include "gpu_layer.hpp"

#include <cmath>
#include <cstdint>

#include "device_buffer.hpp"
#include "dropout.hpp"
#include "fill.hpp"
#include "gelu.hpp"
#include "layer_norm.hpp"
#include "layer_reference.hpp"
#include "reference/reference.hpp"
#include "softmax.hpp"
#include "timing.hpp"

namespace trainsim::validate {

namespace {

using kernels::Bf16;
using kernels::DeviceBuffer;
using kernels::GemmProblem;

constexpr float kDropout = LayerConstants::dropout;
constexpr float kEps = LayerConstants::eps;

std::size_t sz(long n) { return static_cast<std::size_t>(n); }

/// cuBLAS problem C (m x n) = op(A) op(B), column-major; `ta`/`tb` say whether A/B are transposed.
GemmProblem problem(long m, long n, long k, bool ta, bool tb, long lda, long ldb, long ldc) {
  GemmProblem p;
  p.m = m, p.n = n, p.k = k;
  p.trans_a = ta, p.trans_b = tb;
  p.lda = lda, p.ldb = ldb, p.ldc = ldc;
  return p;
}

GemmProblem batched(GemmProblem p, long batch, long long sa, long long sb, long long sc) {
  p.batch = batch;
  p.stride_a = sa, p.stride_b = sb, p.stride_c = sc;
  return p;
}

}  // namespace

struct GpuLayer::Buffers {
  // Forward activations (bf16) and what the backward pass reads.
  DeviceBuffer<Bf16> x, qkv, scores, probs, probs_dropped, context, attn_proj, residual1, ln1,
      ffn_pre, ffn_act, ffn_proj, residual2, out;
  DeviceBuffer<std::uint8_t> attn_mask, mask1, mask2;
  DeviceBuffer<float> mean1, rstd1, mean2, rstd2;
  // Weights.
  DeviceBuffer<Bf16> w_qkv, w_o, w_1, w_2, bias_o, bias_2;
  DeviceBuffer<float> gamma1, beta1, gamma2, beta2;
  // Gradients.
  DeviceBuffer<Bf16> d_out, d_residual2, d_ffn_proj, d_ffn_act, d_ffn_pre, d_ln1, d_residual1,
      d_attn_proj, d_context, d_probs_dropped, d_probs, d_scores, d_qkv, d_x, dw_qkv, dw_o, dw_1,
      dw_2;
  DeviceBuffer<float> d_gamma1, d_beta1, d_gamma2, d_beta2;
};

GpuLayer::GpuLayer(const model::TransformerSpec& spec, long micro_batch,
                   const kernels::CublasLt& lt, cudaStream_t stream)
    : spec_(spec),
      micro_batch_(micro_batch),
      lt_(lt),
      stream_(stream),
      buf_(std::make_unique<Buffers>()) {
  const long b = micro_batch, s = spec.seq_len, h = spec.hidden, f = spec.ffn_hidden;
  const long t = b * s, a = spec.heads, pairs = b * a, sc = pairs * s * s;
  Buffers& B = *buf_;
  for (auto* p : {&B.x, &B.context, &B.attn_proj, &B.residual1, &B.ln1, &B.ffn_proj, &B.residual2,
                  &B.out, &B.d_out, &B.d_residual2, &B.d_ffn_proj, &B.d_ln1, &B.d_residual1,
                  &B.d_attn_proj, &B.d_context, &B.d_x})
    *p = DeviceBuffer<Bf16>(sz(t * h));
  for (auto* p : {&B.qkv, &B.d_qkv}) *p = DeviceBuffer<Bf16>(sz(t * 3 * h));
  for (auto* p :
       {&B.scores, &B.probs, &B.probs_dropped, &B.d_probs_dropped, &B.d_probs, &B.d_scores})
    *p = DeviceBuffer<Bf16>(sz(sc));
  for (auto* p : {&B.ffn_pre, &B.ffn_act, &B.d_ffn_act, &B.d_ffn_pre})
    *p = DeviceBuffer<Bf16>(sz(t * f));
  B.attn_mask = DeviceBuffer<std::uint8_t>(sz(sc));
  B.mask1 = DeviceBuffer<std::uint8_t>(sz(t * h));
  B.mask2 = DeviceBuffer<std::uint8_t>(sz(t * h));
  for (auto* p : {&B.mean1, &B.rstd1, &B.mean2, &B.rstd2}) *p = DeviceBuffer<float>(sz(t));
  B.w_qkv = DeviceBuffer<Bf16>(sz(3 * h * h));
  B.dw_qkv = DeviceBuffer<Bf16>(sz(3 * h * h));
  B.w_o = DeviceBuffer<Bf16>(sz(h * h));
  B.dw_o = DeviceBuffer<Bf16>(sz(h * h));
  for (auto* p : {&B.w_1, &B.w_2, &B.dw_1, &B.dw_2}) *p = DeviceBuffer<Bf16>(sz(h * f));
  B.bias_o = DeviceBuffer<Bf16>(sz(h));
  B.bias_2 = DeviceBuffer<Bf16>(sz(h));
  for (auto* p :
       {&B.gamma1, &B.beta1, &B.gamma2, &B.beta2, &B.d_gamma1, &B.d_beta1, &B.d_gamma2, &B.d_beta2})
    *p = DeviceBuffer<float>(sz(h));

  // Inputs, weights and the incoming gradient: deterministic values of a trained layer's scale.
  std::uint64_t seed = 100;
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(h));
  for (auto* p : {&B.x, &B.d_out})
    kernels::fill_uniform(p->get(), kernels::ElementType::bf16, p->size(), seed++, -1, 1, stream);
  for (auto* p : {&B.w_qkv, &B.w_o, &B.w_1, &B.w_2, &B.bias_o, &B.bias_2})
    kernels::fill_uniform(p->get(), kernels::ElementType::bf16, p->size(), seed++, -w_scale,
                          w_scale, stream);
  for (auto* p : {&B.gamma1, &B.gamma2})
    kernels::fill_uniform(p->get(), kernels::ElementType::fp32, p->size(), seed++, 0.9f, 1.1f,
                          stream);
  for (auto* p : {&B.beta1, &B.beta2, &B.d_gamma1, &B.d_beta1, &B.d_gamma2, &B.d_beta2})
    kernels::fill_uniform(p->get(), kernels::ElementType::fp32, p->size(), seed++, -0.1f, 0.1f,
                          stream);
  TRAINSIM_CUDA(cudaStreamSynchronize(stream));
  build_forward();
  forward_steps_ = steps_.size();
  build_backward();
}

GpuLayer::~GpuLayer() = default;

void GpuLayer::gemm(const std::string& name, const GemmProblem& p, const void* a, const void* b,
                    void* c) {
  plans_.push_back(std::make_unique<kernels::GemmPlan>(lt_, p, kernels::GemmPrecision::bf16));
  const kernels::GemmPlan* plan = plans_.back().get();
  cudaStream_t stream = stream_;
  steps_.push_back({name, [plan, a, b, c, stream] { plan->run(a, b, c, stream); }});
}

// Row-major [rows, cols] tensors are column-major (cols x rows) to cuBLAS. A linear layer
// y = x W^T with W [out, in] row-major is y^T (out x t) = op(W_stored (in x out), T) * x^T (in x
// t): the "TN" problem m = out, n = t, k = in. The simulator writes the same GEMM as t x out x in.
void GpuLayer::build_forward() {
  Buffers& B = *buf_;
  cudaStream_t st = stream_;
  const long b = micro_batch_, s = spec_.seq_len, h = spec_.hidden, f = spec_.ffn_hidden;
  const long t = b * s, a = spec_.heads, d = h / a, pairs = b * a;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const long qkv_ld = b * 3 * h, ctx_ld = b * h;  // row strides of one sequence position
  Bf16* q = B.qkv.get();
  Bf16* k = q + d;
  Bf16* v = q + 2 * d;

  gemm("qkv", problem(3 * h, t, h, true, false, h, h, 3 * h), B.w_qkv.get(), B.x.get(),
       B.qkv.get());
  // Per pair j: scores_j^T (keys x queries) = K_j (s x d) * Q_j^T (d x s). Q_j^T and K_j^T are
  // (d x s) column-major views of qkv with ld b*3h, pair stride 3d; scores are row-major [q, key].
  gemm("attn_scores",
       batched(problem(s, s, d, true, false, qkv_ld, qkv_ld, s), pairs, 3 * d, 3 * d, s * s), k, q,
       B.scores.get());
  const long sc = pairs * s * s;
  steps_.push_back({"softmax", [=, &B] {
                      kernels::softmax_forward(B.scores.get(), B.probs.get(), pairs * s, s, scale,
                                               st);
                    }});
  steps_.push_back({"attn_dropout", [=, &B] {
                      kernels::dropout_forward(B.probs.get(), B.probs_dropped.get(),
                                               B.attn_mask.get(), sc, kDropout,
                                               LayerConstants::attn_dropout_seed, st);
                    }});
  // context_j^T (d x queries) = V_j^T (d x keys) * P_j^T (keys x queries); written into [s, b, h].
  gemm("attn_context",
       batched(problem(d, s, s, false, false, qkv_ld, s, ctx_ld), pairs, 3 * d, s * s, d), v,
       B.probs_dropped.get(), B.context.get());
  gemm("attn_out", problem(h, t, h, true, false, h, h, h), B.w_o.get(), B.context.get(),
       B.attn_proj.get());
  steps_.push_back({"residual_1", [=, &B] {
                      kernels::bias_dropout_residual(B.attn_proj.get(), B.bias_o.get(), B.x.get(),
                                                     B.residual1.get(), B.mask1.get(), t * h, h,
                                                     kDropout, LayerConstants::residual1_seed, st);
                    }});
  steps_.push_back({"layernorm_1", [=, &B] {
                      kernels::layer_norm_forward(B.residual1.get(), B.gamma1.get(), B.beta1.get(),
                                                  B.ln1.get(), B.mean1.get(), B.rstd1.get(), t, h,
                                                  kEps, st);
                    }});
  gemm("ffn_in", problem(f, t, h, true, false, h, h, f), B.w_1.get(), B.ln1.get(), B.ffn_pre.get());
  steps_.push_back(
      {"gelu", [=, &B] { kernels::gelu_forward(B.ffn_pre.get(), B.ffn_act.get(), t * f, st); }});
  gemm("ffn_out", problem(h, t, f, true, false, f, f, h), B.w_2.get(), B.ffn_act.get(),
       B.ffn_proj.get());
  steps_.push_back({"residual_2", [=, &B] {
                      kernels::bias_dropout_residual(B.ffn_proj.get(), B.bias_2.get(), B.ln1.get(),
                                                     B.residual2.get(), B.mask2.get(), t * h, h,
                                                     kDropout, LayerConstants::residual2_seed, st);
                    }});
  steps_.push_back({"layernorm_2", [=, &B] {
                      kernels::layer_norm_forward(B.residual2.get(), B.gamma2.get(), B.beta2.get(),
                                                  B.out.get(), B.mean2.get(), B.rstd2.get(), t, h,
                                                  kEps, st);
                    }});
}

// Backward in reverse order. For y^T = op(W_stored, T) x^T: the data gradient is
// dx^T (in x t) = W_stored (in x out) * dy^T (out x t) ("NN"), the weight gradient
// dW_stored (in x out) = x^T (in x t) * op(dy^T, T) (t x out) ("NT").
void GpuLayer::build_backward() {
  Buffers& B = *buf_;
  cudaStream_t st = stream_;
  const long b = micro_batch_, s = spec_.seq_len, h = spec_.hidden, f = spec_.ffn_hidden;
  const long t = b * s, a = spec_.heads, d = h / a, pairs = b * a, sc = pairs * s * s;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const long qkv_ld = b * 3 * h, ctx_ld = b * h;
  const Bf16* q = B.qkv.get();
  const Bf16* k = q + d;
  const Bf16* v = q + 2 * d;
  Bf16* dq = B.d_qkv.get();
  Bf16* dk = dq + d;
  Bf16* dv = dq + 2 * d;

  steps_.push_back({"layernorm_2_bwd", [=, &B] {
                      kernels::layer_norm_backward(B.d_out.get(), B.residual2.get(), B.gamma2.get(),
                                                   B.mean2.get(), B.rstd2.get(),
                                                   B.d_residual2.get(), B.d_gamma2.get(),
                                                   B.d_beta2.get(), t, h, st);
                    }});
  steps_.push_back({"residual_2_bwd", [=, &B] {
                      kernels::dropout_backward(B.d_residual2.get(), B.mask2.get(),
                                                B.d_ffn_proj.get(), t * h, kDropout, st);
                    }});
  gemm("ffn_out_dgrad", problem(f, t, h, false, false, f, h, f), B.w_2.get(), B.d_ffn_proj.get(),
       B.d_ffn_act.get());
  gemm("ffn_out_wgrad", problem(f, h, t, false, true, f, h, f), B.ffn_act.get(), B.d_ffn_proj.get(),
       B.dw_2.get());
  steps_.push_back({"gelu_bwd", [=, &B] {
                      kernels::gelu_backward(B.ffn_pre.get(), B.d_ffn_act.get(), B.d_ffn_pre.get(),
                                             t * f, st);
                    }});
  gemm("ffn_in_dgrad", problem(h, t, f, false, false, h, f, h), B.w_1.get(), B.d_ffn_pre.get(),
       B.d_ln1.get());
  gemm("ffn_in_wgrad", problem(h, f, t, false, true, h, f, h), B.ln1.get(), B.d_ffn_pre.get(),
       B.dw_1.get());
  steps_.push_back({"layernorm_1_bwd", [=, &B] {
                      kernels::layer_norm_backward(B.d_ln1.get(), B.residual1.get(), B.gamma1.get(),
                                                   B.mean1.get(), B.rstd1.get(),
                                                   B.d_residual1.get(), B.d_gamma1.get(),
                                                   B.d_beta1.get(), t, h, st);
                    }});
  steps_.push_back({"residual_1_bwd", [=, &B] {
                      kernels::dropout_backward(B.d_residual1.get(), B.mask1.get(),
                                                B.d_attn_proj.get(), t * h, kDropout, st);
                    }});
  gemm("attn_out_dgrad", problem(h, t, h, false, false, h, h, h), B.w_o.get(), B.d_attn_proj.get(),
       B.d_context.get());
  gemm("attn_out_wgrad", problem(h, h, t, false, true, h, h, h), B.context.get(),
       B.d_attn_proj.get(), B.dw_o.get());
  // dP_j^T (keys x queries) = V_j (keys x d) * dC_j^T (d x queries).
  gemm("attn_context_dgrad",
       batched(problem(s, s, d, true, false, qkv_ld, ctx_ld, s), pairs, 3 * d, d, s * s), v,
       B.d_context.get(), B.d_probs_dropped.get());
  // dV_j^T (d x keys) = dC_j^T (d x queries) * P_j (queries x keys), P_j^T being what is stored.
  gemm("attn_context_wgrad",
       batched(problem(d, s, s, false, true, ctx_ld, s, qkv_ld), pairs, d, s * s, 3 * d),
       B.d_context.get(), B.probs_dropped.get(), dv);
  steps_.push_back({"attn_dropout_bwd", [=, &B] {
                      kernels::dropout_backward(B.d_probs_dropped.get(), B.attn_mask.get(),
                                                B.d_probs.get(), sc, kDropout, st);
                    }});
  steps_.push_back({"softmax_bwd", [=, &B] {
                      kernels::softmax_backward(B.probs.get(), B.d_probs.get(), B.d_scores.get(),
                                                pairs * s, s, scale, st);
                    }});
  // dQ_j^T (d x queries) = K_j^T (d x keys) * dS_j^T (keys x queries).
  gemm("attn_scores_dgrad",
       batched(problem(d, s, s, false, false, qkv_ld, s, qkv_ld), pairs, 3 * d, s * s, 3 * d), k,
       B.d_scores.get(), dq);
  // dK_j^T (d x keys) = Q_j^T (d x queries) * dS_j (queries x keys).
  gemm("attn_scores_wgrad",
       batched(problem(d, s, s, false, true, qkv_ld, s, qkv_ld), pairs, 3 * d, s * s, 3 * d), q,
       B.d_scores.get(), dk);
  gemm("qkv_dgrad", problem(h, t, 3 * h, false, false, h, 3 * h, h), B.w_qkv.get(), B.d_qkv.get(),
       B.d_x.get());
  gemm("qkv_wgrad", problem(h, 3 * h, t, false, true, h, 3 * h, h), B.x.get(), B.d_qkv.get(),
       B.dw_qkv.get());
}

void GpuLayer::run() const {
  for (const auto& step : steps_) step.launch();
}

std::vector<std::string> GpuLayer::kernel_names() const {
  std::vector<std::string> names;
  for (const auto& step : steps_) names.push_back(step.name);
  return names;
}

namespace {

std::vector<float> as_float(const DeviceBuffer<Bf16>& b) {
  return kernels::from_bf16(b.download());
}

}  // namespace

double GpuLayer::verify_forward() const {
  for (std::size_t i = 0; i < forward_steps_; ++i) steps_[i].launch();
  TRAINSIM_CUDA(cudaStreamSynchronize(stream_));
  const Buffers& B = *buf_;
  // Stored weights are column-major (in x out), i.e. row-major [out, in]: the reference's layout.
  LayerInputs in;
  in.x = as_float(B.x);
  in.w_qkv = as_float(B.w_qkv);
  in.w_o = as_float(B.w_o);
  in.w_1 = as_float(B.w_1);
  in.w_2 = as_float(B.w_2);
  in.bias_o = as_float(B.bias_o);
  in.bias_2 = as_float(B.bias_2);
  in.gamma1 = B.gamma1.download();
  in.beta1 = B.beta1.download();
  in.gamma2 = B.gamma2.download();
  in.beta2 = B.beta2.download();
  const auto want = layer_forward_reference(spec_, micro_batch_, in);
  return kernels::reference::worst_mismatch(as_float(B.out), want, 1.0 / 32, 1.0 / 32);
}

double verify_small_gpu_layer(const kernels::CublasLt& lt, cudaStream_t stream) {
  model::TransformerSpec spec;
  spec.name = "verify";
  spec.layers = 1;
  spec.hidden = 128;
  spec.heads = 2;
  spec.ffn_hidden = 512;
  spec.seq_len = 32;
  const GpuLayer layer(spec, 2, lt, stream);
  return layer.verify_forward();
}

std::vector<std::pair<std::string, Seconds>> GpuLayer::time_per_kernel(int iters) const {
  std::vector<cudaEvent_t> events(steps_.size() + 1);
  for (auto& e : events) TRAINSIM_CUDA(cudaEventCreate(&e));
  std::vector<std::pair<std::string, Seconds>> out;
  for (const auto& step : steps_) out.emplace_back(step.name, 0.0);
  run();  // warm-up
  for (int it = 0; it < iters; ++it) {
    TRAINSIM_CUDA(cudaEventRecord(events[0], stream_));
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      steps_[i].launch();
      TRAINSIM_CUDA(cudaEventRecord(events[i + 1], stream_));
    }
    TRAINSIM_CUDA(cudaEventSynchronize(events.back()));
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      float ms = 0;
      TRAINSIM_CUDA(cudaEventElapsedTime(&ms, events[i], events[i + 1]));
      out[i].second += ms * 1e-3 / iters;
    }
  }
  for (auto& e : events) cudaEventDestroy(e);
  return out;
}

Seconds GpuLayer::time_pass(int iters) const {
  kernels::TimingPolicy policy;
  policy.warmup = 2;
  policy.min_calls = iters;
  return kernels::time_per_call([this] { run(); }, stream_, policy);
}

}  // namespace trainsim::validate
