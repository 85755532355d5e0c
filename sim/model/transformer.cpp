#include "model/transformer.hpp"

#include "core/error.hpp"
#include "model/eager_ops.hpp"
#include "model/encoder_decoder.hpp"
#include "model/hf_bert_ops.hpp"
#include "model/module_kernels.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace trainsim::model {

namespace {
constexpr double kBf16 = 2.0;  // bytes per element of activations and weights in the kernels
constexpr double kFp32 = 4.0;  // the loss's softmax runs in fp32
constexpr double kMask = 1.0;  // a dropout mask is one byte per element
// T5's relative position buckets per table (T5Config relative_attention_num_buckets, 32 in
// every released T5 config.json; Raffel et al. 2020, 3.1: "we use 32 embeddings").
constexpr double kRelativeBuckets = 32;

double norm_parameters(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden);
  return s.norm == NormKind::layernorm ? 2 * h : h;  // scale (+ shift for layer norm)
}

/// Kernel class of a normalisation (measured samples are named after the kernel, not the op).
std::string norm_kernel(const TransformerSpec& s) {
  return s.norm == NormKind::layernorm ? "layer_norm" : "rms_norm";
}

/// Kernel class of an elementwise op's backward: its forward's class + "_bwd". Not for the
/// embedding: a framework's "embedding_bwd" is the scatter-add into the table (PyTorch's
/// embedding_dense_backward, ~10x slower per byte than a copy), counted on the gradient it reads
/// and writes (4 bytes per element); the op here is a composite (dropout, norm and the gather's
/// backward) of 24 bytes per element, so that rate would cost the slow scatter on 6x its traffic.
std::string backward_kernel(const Operation& forward) {
  if (forward.kernel.empty() || forward.kernel == "embedding") return {};
  return forward.kernel + "_bwd";
}

/// Shapes shared by the op and activation lists, already divided for one TP rank.
struct Dims {
  double b, sq, h, f, a, hkv, d, t, tp, sp;
  double hq;  ///< query (and context) columns: heads x head_dim, h unless head_dim is set
  double sk;  ///< cross-attention keys per sequence (the encoder's tokens); 0 without
};

Dims dims_of(const TransformerSpec& s, const LayerShape& shape) {
  Dims x{};
  x.b = static_cast<double>(shape.micro_batch);
  x.sq = static_cast<double>(s.seq_len);
  x.h = static_cast<double>(s.hidden);
  x.f = static_cast<double>(s.ffn_hidden);
  x.a = static_cast<double>(s.heads);
  x.d = s.head_dim > 0 ? static_cast<double>(s.head_dim) : x.h / x.a;
  x.hq = x.a * x.d;
  x.sk = static_cast<double>(s.cross_seq_len);
  x.hkv = static_cast<double>(kv_heads_of(s)) * x.d;
  x.t = x.b * x.sq;
  x.tp = static_cast<double>(shape.tp);
  x.sp = shape.sequence_parallel ? x.tp : 1.0;  // divisor of the tensors TP alone replicates
  return x;
}

}  // namespace

Operation make_gemm(std::string name, double m, double n, double k, double batch, Dtype dtype) {
  const double elem = dtype_bytes(dtype);
  Operation op;
  op.name = std::move(name);
  op.kind = OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.dtype = dtype;
  op.flops = 2.0 * m * n * k * batch;
  op.bytes = elem * batch * (m * k + k * n + m * n);
  return op;
}

Operation make_elementwise(std::string name, Bytes bytes, Flops flops, std::string kernel) {
  Operation op;
  op.name = std::move(name);
  op.kind = OpKind::elementwise;
  op.bytes = bytes;
  op.flops = flops;
  op.kernel = std::move(kernel);
  return op;
}

int ops_kernels(const std::vector<Operation>& ops) {
  int n = 0;
  for (const auto& op : ops) n += op.kernels;
  return n;
}

long kv_heads_of(const TransformerSpec& s) { return s.kv_heads > 0 ? s.kv_heads : s.heads; }

bool gated(MlpKind mlp) { return mlp == MlpKind::swiglu || mlp == MlpKind::geglu; }

const char* mlp_name(MlpKind mlp) {
  switch (mlp) {
    case MlpKind::gelu: return "gelu";
    case MlpKind::swiglu: return "swiglu";
    case MlpKind::squared_relu: return "squared_relu";
    case MlpKind::relu: return "relu";
    case MlpKind::geglu: return "geglu";
  }
  return "gelu";
}

double parameters_per_layer(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden);
  const double f = static_cast<double>(s.ffn_hidden);
  const double d = s.head_dim > 0 ? static_cast<double>(s.head_dim) : h / static_cast<double>(s.heads);
  const double hq = static_cast<double>(s.heads) * d, hkv = static_cast<double>(kv_heads_of(s)) * d;
  // q and the output projection h x hq, k and v h x hkv (and their biases: hq, h, hkv, hkv).
  const double attention = 2 * h * hq + 2 * h * hkv + (s.bias ? hq + h + 2 * hkv : 0);
  const double mlp = !gated(s.mlp) ? 2 * h * f + (s.bias ? f + h : 0)
                                   : 3 * h * f + (s.bias ? 2 * f + h : 0);
  // A decoder block's cross-attention: the same projections and a norm of its own.
  const double cross = s.cross_seq_len > 0 ? attention + norm_parameters(s) : 0;
  return attention + mlp + 2 * norm_parameters(s) + cross;
}

TransformerSpec context_parallel_share(const TransformerSpec& s, long cp) {
  TransformerSpec share = s;
  if (cp <= 1) return share;
  if (share.position_rows == 0) share.position_rows = s.seq_len;
  share.seq_len = s.seq_len / cp;
  return share;
}

double embedding_parameters(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden);
  double p = static_cast<double>(s.vocab) * h;
  if (s.learned_positions) p += static_cast<double>(s.position_rows > 0 ? s.position_rows : s.seq_len) * h;
  if (s.embedding_norm) p += norm_parameters(s);
  // T5: one bias table (buckets x heads) per stack, held by its first block in Hugging Face's
  // code, counted here as a lookup table like the positions it stands for.
  if (s.relative_position_bias)
    p += (is_encoder_decoder(s) ? 2 : 1) * kRelativeBuckets * static_cast<double>(s.heads);
  return p;
}

double head_parameters(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden);
  double p = 0;
  if (s.mlm_head) p += h * h + h + norm_parameters(s) + static_cast<double>(s.vocab);
  if (s.final_norm) p += norm_parameters(s) * (is_encoder_decoder(s) ? 2 : 1);  // each stack ends in one
  if (!s.tied_embeddings) p += static_cast<double>(s.vocab) * h;
  return p;
}

double parameter_count(const TransformerSpec& s) {
  return block_parameters(s) + embedding_parameters(s) + head_parameters(s);
}

namespace {

/// One step of a layer: its forward kernels and, when they are not backward_of's rule, the
/// kernels autograd runs for them.
struct Part {
  std::vector<Operation> forward;
  std::vector<Operation> backward;
  bool own_backward = false;
  /// Inside the unfused core attention (scores, softmax, dropout, context): what Megatron's
  /// selective recomputation runs again.
  bool core_attention = false;
};

Part op_part(Operation op) { return {{std::move(op)}, {}, false}; }
/// An op whose eager module code launches `kernels` forward and `backward_kernels` backward
/// kernels (Operation::kernels; counts from the torch profile, see operation.hpp).
Part op_part(Operation op, int kernels, int backward_kernels) {
  op.kernels = kernels;
  op.backward_kernels = backward_kernels;
  return op_part(std::move(op));
}
Part eager_part(EagerPart p) { return {std::move(p.forward), std::move(p.backward), true}; }

/// The layer's steps in forward order.
std::vector<Part> layer_parts(const TransformerSpec& s, const LayerShape& shape) {
  const Dims x = dims_of(s, shape);
  const double heads = x.a / x.tp;  // attention heads on this rank
  const double act = x.t * x.h * kBf16 / x.sp;
  const bool eager_norm = shape.eager && s.norm == NormKind::rmsnorm;
  std::vector<Part> parts;
  // The QKV and the MLP's first linear read the norm's output, the others not. In eager module
  // code they are separate nn.Linear (q, k, v; gate, up), which no norm feeds in FP8.
  const Fp8LinearPlace after_norm{!shape.eager, false, x.sp}, column{false, false, x.sp}, row{false, true, x.sp};
  auto norm = [&](const char* layernorm_name, const char* rmsnorm_name) {
    if (eager_norm) {
      parts.push_back(eager_part(eager_rms_norm(rmsnorm_name, x.t / x.sp, x.h)));
      return;
    }
    // One kernel; its backward two: the input gradient and the weight (and bias) gradient.
    Part p = op_part(make_elementwise(s.norm == NormKind::layernorm ? layernorm_name : rmsnorm_name, 2 * act,
                                      8 * x.t * x.h / x.sp, norm_kernel(s)),
                     1, 2);
    if (norm_writes_fp8_input(shape.fp8, after_norm)) {
      // It writes 1 B per element instead of 2; its backward, in bf16, is unchanged.
      p.backward = backward_of(p.forward);
      p.own_backward = true;
      p.forward.front().bytes = act + act * dtype_bytes(Dtype::fp8) / kBf16;
    }
    parts.push_back(std::move(p));
  };
  const ModuleKernels mk = shape.module_kernels;
  // A linear layer's GEMM; where the framework reduces its bias's gradient in a kernel of its
  // own, that reduction over the layer's `bias_rows` tokens runs before the GEMM's gradients.
  auto linear = [&](Operation gemm, double bias_rows, const Fp8LinearPlace& place) {
    const bool biased = s.bias && mk != ModuleKernels::fused;
    if (!biased && !shape.fp8.enabled) {
      parts.push_back(op_part(std::move(gemm)));
      return;
    }
    Part p;
    if (shape.fp8.enabled) {
      // A column-parallel projection casts its input before the sequence-parallel gather
      // (Transformer Engine's Linear), a row-parallel one its whole input.
      const double input = gemm.m * gemm.k / (place.row_parallel ? 1.0 : x.sp), weight = gemm.k * gemm.n;
      p.forward = fp8_forward_casts(gemm.name, input, weight, shape.fp8, place);
      p.backward = fp8_backward_casts(gemm.name, input, weight, gemm.m * gemm.n, shape.fp8, place);
      gemm = make_fp8_gemm(gemm.name, gemm.m, gemm.n, gemm.k, gemm.batch, shape.fp8.forward_accumulation);
    }
    if (biased) p.backward.push_back(bias_grad_reduction(gemm.name + "_bias_grad", bias_rows, gemm.n));
    for (auto& b : backward_of({gemm})) p.backward.push_back(std::move(b));
    p.forward.push_back(std::move(gemm));
    p.own_backward = true;
    parts.push_back(std::move(p));
  };
  const double tH = x.t * x.hq / x.tp;  // elements of q (or of the context) on this rank
  // SDPA's tensors are [b, heads, s, d] views of [b, s, heads, d] storage: with one sequence,
  // moving s ahead of b is still a view, with more it is a copy.
  const bool sdpa_copies = mk == ModuleKernels::torch_layer && shape.flash_attention && shape.micro_batch > 1;
  // The context back from [batch x heads, s, d] to [s, b, h] after the batched GEMM is a copy of
  // its own in these frameworks' module code (below).
  const bool bmm_context = !shape.flash_attention && (mk == ModuleKernels::torch_layer || mk == ModuleKernels::megatron);
  // The written-out attention over `sk` keys per query (sk = sq: self-attention; the encoder's
  // tokens: a decoder block's cross-attention); its ops are named with `prefix`.
  auto unfused_core = [&](const std::string& prefix, double sk) {
    const double scores = x.b * heads * x.sq * sk * kBf16;
    const std::size_t core_begin = parts.size();
    // The batched GEMM (the eager 1/sqrt(d) scale, a kernel each way, below where modelled).
    parts.push_back(op_part(make_gemm(prefix + "attn_scores", x.sq, sk, x.d, x.b * heads, Dtype::bf16)));
    if (mk == ModuleKernels::torch_layer) {
      const double score_elements = scores / kBf16;
      parts.push_back({{scalar_multiply("attn_scale", score_elements)}, {scalar_multiply("attn_scale_bwd", score_elements)}, true});
    }
    if (s.relative_position_bias) {
      // Hugging Face's T5Attention.forward (no 1/sqrt(d) scale: T5 folds it into the init):
      // `scores += position_bias_masked`, the [b, heads, sq, sk] bias with the mask folded in
      // (read scores and bias, write scores; its gradient passes through), then
      // `softmax(scores.float(), dim=-1).type_as(scores)`: an upcast (2 B in, 4 B out), the
      // softmax in fp32 and a downcast (4 B in, 2 B out), a kernel each.
      parts.push_back(op_part(make_elementwise(prefix + "position_bias_add", 3 * scores, scores / kBf16)));
      parts.push_back(op_part(make_elementwise(prefix + "softmax_upcast", 3 * scores, 0)));
      parts.push_back(op_part(make_elementwise(prefix + "softmax", 4 * scores, 5 * scores / kBf16, "softmax"), 1, 2));
      parts.push_back(op_part(make_elementwise(prefix + "softmax_downcast", 3 * scores, 0)));
    } else {
      // softmax reads and writes the scores; dropout on the probabilities reads/writes them
      // again. The profile's backward has one more scores-sized multiply, counted here.
      parts.push_back(op_part(make_elementwise(prefix + "softmax", 2 * scores, 5 * scores / kBf16, "softmax"), 1, 2));
    }
    if (s.dropout) parts.push_back(op_part(make_elementwise(prefix + "attn_dropout", 2.5 * scores, 0, "dropout")));
    // The batched GEMM and the copy of the context into the [s, b, h] layout, both ways (the
    // copies are ops of their own where the module kernels are modelled: the context's below,
    // the QKV gradient's with the split).
    parts.push_back(op_part(make_gemm(prefix + "attn_context", x.sq, x.d, sk, x.b * heads, Dtype::bf16),
                            bmm_context ? 1 : 2, bmm_context ? 2 : 3));
    // The context back from [batch x heads, s, d] to [s, b, h] before the output projection:
    // a copy after the batched GEMM, the last step of Megatron's CoreAttention.forward.
    if (bmm_context) parts.push_back({{permute_copy(prefix + "context_layout_copy", tH)}, {}, true});
    for (std::size_t i = core_begin; i < parts.size(); ++i) parts[i].core_attention = true;
  };
  norm("layernorm_1", "rmsnorm_1");
  const double q_cols = x.hq / x.tp, kv_cols = x.hkv / x.tp;
  if (shape.eager) {
    // Three nn.Linear on the norm's output (gathered along the sequence under sequence
    // parallelism): autograd adds their three input gradients.
    parts.push_back({{}, {gradient_accumulation_add("qkv_grad_add_1", x.t * x.h),
                          gradient_accumulation_add("qkv_grad_add_2", x.t * x.h)}, true});
    linear(make_gemm("q", x.t, q_cols, x.h, 1, Dtype::bf16), x.t, column);
    linear(make_gemm("k", x.t, kv_cols, x.h, 1, Dtype::bf16), x.t, column);
    linear(make_gemm("v", x.t, kv_cols, x.h, 1, Dtype::bf16), x.t, column);
    // Without a position table, rotary embeddings, unless the positions enter as T5's bias.
    if (!s.learned_positions && !s.relative_position_bias) {
      parts.push_back(eager_part(eager_rotary("rope_q", x.t * q_cols)));
      parts.push_back(eager_part(eager_rotary("rope_k", x.t * kv_cols)));
    }
    const double n_rep = x.hq / x.hkv;
    if (n_rep > 1) {
      parts.push_back(eager_part(eager_repeat_kv("repeat_k", x.t * kv_cols, n_rep)));
      parts.push_back(eager_part(eager_repeat_kv("repeat_v", x.t * kv_cols, n_rep)));
    }
  } else {
    // Split into q, k, v by views: autograd joins their gradients (one cat kernel, explicit
    // below where the framework's module kernels are modelled).
    linear(make_gemm("qkv", x.t, (x.hq + 2 * x.hkv) / x.tp, x.h, 1, Dtype::bf16), x.t, after_norm);
    const double qkv = x.t * (x.hq + 2 * x.hkv) / x.tp;
    if (mk != ModuleKernels::fused) {
      // MPT chunks the [b, s, 3d] output along its last dimension: the cat joins whole d-wide
      // runs; Megatron and the torch layer split head-interleaved columns (head_dim-wide runs).
      const bool wide = mk == ModuleKernels::mpt || mk == ModuleKernels::mpt_flash;
      Part split{{}, {wide ? wide_chunk_grad_cat("qkv_split_grad_cat", qkv) : chunk_grad_cat("qkv_split_grad_cat", qkv)}, true};
      if (mk == ModuleKernels::torch_layer) split.backward.push_back(permute_copy("qkv_grad_layout_copy", qkv));
      parts.push_back(std::move(split));
    }
  }
  if (shape.flash_attention) {
    // One kernel: scores and probabilities never reach device memory.
    if (sdpa_copies)
      // The output's gradient, a permuted view of the [s, b, h] gradient, made contiguous for the
      // kernel (the profile's third direct copy with the context's and the QKV gradient's).
      parts.push_back({{}, {permute_copy("sdpa_grad_layout_copy", tH)}, true});
    // The kernel and the copy of its output into the [s, b, h] layout; backward: the row dot
    // product (dO . O), the dq/dk/dv kernel, dq's conversion and two layout copies (explicit
    // above when they are modelled as ops).
    // llm-foundry's flash_attn_fn unpads q, k and v (one gather each; backward a zeros and a
    // scatter each) and pads the kernel's output back (zeros and an index put; backward an index
    // select), with or without padding in the batch.
    const bool unpad = mk == ModuleKernels::mpt_flash;
    if (unpad) {
      // Each unpad_input call first derives the indices from the mask (two host syncs each):
      // the q, k and v calls in turn, each followed by its gather (attention.py:280-288).
      Part p{{}, {}, true};
      for (const auto& [name, elements] : {std::pair{"unpad_q", tH}, std::pair{"unpad_k", x.t * kv_cols},
                                           std::pair{"unpad_v", x.t * kv_cols}}) {
        for (auto& op : unpad_index_ops(name, x.b, x.sq)) p.forward.push_back(std::move(op));
        p.forward.push_back(unpad_gather(name, elements));
      }
      for (const auto& [name, elements] : {std::pair{"unpad_v_grad", x.t * kv_cols}, std::pair{"unpad_k_grad", x.t * kv_cols},
                                           std::pair{"unpad_q_grad", tH}})
        for (auto& op : unpad_gather_grad(name, elements)) p.backward.push_back(std::move(op));
      parts.push_back(std::move(p));
    }
    parts.push_back(op_part(make_fused_attention(s, shape), sdpa_copies ? 1 : 2, sdpa_copies ? 3 : 5));
    // Megatron-core's selective recomputation checkpoints this call (attention.py:
    // checkpoint_core_attention under recompute_granularity "selective"), the fused kernel too.
    parts.back().core_attention = true;
    if (unpad) parts.push_back({pad_index_put("pad_out", tH), {pad_index_put_grad("pad_out_grad", tH)}, true});
  } else {
    unfused_core("", x.sq);
  }
  // After SDPA the context is copied into [s, b, h] only with more than one sequence.
  if (sdpa_copies) parts.push_back({{permute_copy("context_layout_copy", tH)}, {}, true});
  // Row-parallel: the bias is added after the reduction, on the full (or, under sequence
  // parallelism, this rank's) tokens.
  linear(make_gemm("attn_out", x.t, x.h, x.hq / x.tp, 1, Dtype::bf16), x.t / x.sp, row);
  // bias + dropout + residual add.
  // A dropout kernel and an add; backward the dropout's masked scale and autograd's add of the
  // two gradients reaching the residual's input.
  const int residual_kernels = s.dropout ? 2 : 1;
  auto residual = [&](const std::string& name) {
    Part p = op_part(make_elementwise(name, (s.dropout ? 4 : 3) * act, 0, "residual_add"), residual_kernels,
                     residual_kernels);
    if (!s.dropout) {
      // x + f(x) passes its gradient to both inputs unchanged (no kernel); the two gradients
      // reaching x are summed by autograd's input buffer (torch/csrc/autograd/input_buffer.cpp
      // accumulate: one add, in place when it holds the last reference): the forward's kernel
      // again, read two tensors and write one. Measured on the H100 (PyTorch 2.11, MPT block):
      // the backward's residual adds run as long as the forward's.
      p.backward = {make_elementwise(name + "_grad_sum", 3 * act, act / kBf16, "residual_add")};
      p.own_backward = true;
    }
    parts.push_back(std::move(p));
  };
  residual("residual_1");
  if (x.sk > 0) {
    // A decoder block's cross-attention (Hugging Face's T5LayerCrossAttention): a norm, q from
    // it, k and v from the encoder's output (sk tokens per sequence), the written-out attention,
    // the output projection and the residual. One nn.Linear each, as the module code has them.
    norm("layernorm_cross", "rmsnorm_cross");
    const double tk = x.b * x.sk;
    linear(make_gemm("cross_q", x.t, q_cols, x.h, 1, Dtype::bf16), x.t, column);
    linear(make_gemm("cross_k", tk, kv_cols, x.h, 1, Dtype::bf16), tk, column);
    linear(make_gemm("cross_v", tk, kv_cols, x.h, 1, Dtype::bf16), tk, column);
    TRAINSIM_CHECK(!shape.flash_attention, "cross-attention is modelled written out, not as a fused kernel");
    unfused_core("cross_", x.sk);
    linear(make_gemm("cross_attn_out", x.t, x.h, x.hq / x.tp, 1, Dtype::bf16), x.t / x.sp, row);
    residual("residual_cross");
  }
  norm("layernorm_2", "rmsnorm_2");
  const double fr = x.f / x.tp;  // MLP columns on this rank
  if (s.mlp == MlpKind::gelu) {
    linear(make_gemm("ffn_in", x.t, fr, x.h, 1, Dtype::bf16), x.t, after_norm);
    parts.push_back(op_part(make_elementwise("gelu", 2 * x.t * fr * kBf16, 8 * x.t * fr, "gelu")));
  } else if (s.mlp == MlpKind::relu) {
    // T5 v1.0's DenseReluDense: wi, ReLU, dropout, wo (no measured class for ReLU: the device's
    // elementwise rate); the dropout on the f columns is a kernel of its own each way.
    linear(make_gemm("ffn_in", x.t, fr, x.h, 1, Dtype::bf16), x.t, after_norm);
    parts.push_back(op_part(make_elementwise("relu", 2 * x.t * fr * kBf16, x.t * fr)));
    if (s.dropout) parts.push_back(op_part(make_elementwise("ffn_dropout", 2.5 * x.t * fr * kBf16, 0, "dropout")));
  } else if (s.mlp == MlpKind::geglu) {
    // T5 v1.1's DenseGatedActDense: wi_0 and wi_1 (two nn.Linear on the norm's output), GELU
    // (tanh approximation, gelu_new) on the first, the product, dropout, wo.
    parts.push_back({{}, {gradient_accumulation_add("ffn_grad_add", x.t * x.h)}, true});
    linear(make_gemm("ffn_gate", x.t, fr, x.h, 1, Dtype::bf16), x.t, column);
    linear(make_gemm("ffn_up", x.t, fr, x.h, 1, Dtype::bf16), x.t, column);
    parts.push_back(op_part(make_elementwise("gelu", 2 * x.t * fr * kBf16, 8 * x.t * fr, "gelu")));
    parts.push_back(op_part(make_elementwise("gelu_mul", 3 * x.t * fr * kBf16, x.t * fr)));
    if (s.dropout) parts.push_back(op_part(make_elementwise("ffn_dropout", 2.5 * x.t * fr * kBf16, 0, "dropout")));
  } else if (s.mlp == MlpKind::squared_relu) {
    linear(make_gemm("ffn_in", x.t, fr, x.h, 1, Dtype::bf16), x.t, after_norm);
    // Megatron-core has no fused kernel for it (mlp.py: bias_activation_fusion only for GELU and
    // SwiGLU), so the model's activation_func runs: NeMo's squared_relu (nlp/modules/common/
    // megatron/utils.py, torch.pow(F.relu(x), 2) under torch.compile) is one generated kernel
    // each way, no measured class (the device's elementwise rate). Eager code runs relu, then
    // pow: two kernels, each reading and writing the f columns, and two again backward.
    const int kernels = shape.eager ? 2 : 1;
    parts.push_back(op_part(make_elementwise("squared_relu", kernels * 2 * x.t * fr * kBf16, 2 * x.t * fr), kernels, kernels));
  } else if (shape.eager) {
    parts.push_back({{}, {gradient_accumulation_add("ffn_grad_add", x.t * x.h)}, true});
    linear(make_gemm("ffn_gate", x.t, fr, x.h, 1, Dtype::bf16), x.t, column);
    linear(make_gemm("ffn_up", x.t, fr, x.h, 1, Dtype::bf16), x.t, column);
    parts.push_back(eager_part(eager_swiglu("swiglu", x.t * fr)));
  } else {
    linear(make_gemm("ffn_gate_up", x.t, 2 * fr, x.h, 1, Dtype::bf16), x.t, after_norm);
    parts.push_back(op_part(make_elementwise("silu_mul", 3 * x.t * fr * kBf16, 6 * x.t * fr)));
  }
  linear(make_gemm("ffn_out", x.t, x.h, fr, 1, Dtype::bf16), x.t / x.sp, row);
  residual("residual_2");
  return parts;
}

}  // namespace

std::vector<Operation> layer_forward_ops(const TransformerSpec& s, const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_layer_forward(s, shape.micro_batch);
  std::vector<Operation> ops;
  for (auto& p : layer_parts(s, shape))
    for (auto& op : p.forward) ops.push_back(std::move(op));
  return ops;
}

std::vector<Operation> layer_forward_ops(const TransformerSpec& s, long micro_batch) {
  return layer_forward_ops(s, LayerShape{micro_batch});
}

std::vector<Operation> core_attention_forward_ops(const TransformerSpec& s, const LayerShape& shape) {
  std::vector<Operation> ops;
  for (auto& p : layer_parts(s, shape))
    if (p.core_attention)
      for (auto& op : p.forward) ops.push_back(std::move(op));
  return ops;
}

Operation make_fused_attention(const TransformerSpec& s, const LayerShape& shape) {
  const Dims x = dims_of(s, shape);
  const double heads = x.a / x.tp;
  Operation op;
  op.name = "flash_attention";
  op.kind = OpKind::fused_attention;
  op.causal = s.causal;
  op.m = x.sq;
  op.n = x.sq;
  op.k = x.d;
  op.batch = x.b * heads;
  // The kernel visits only the key blocks at or before each query block under a causal mask
  // (FlashAttention-2 paper, 4.1, counts its FLOPs the same way).
  op.flops = 4.0 * x.sq * x.sq * x.d * x.b * heads * (s.causal ? 0.5 : 1.0);
  // Reads Q, K, V, writes O and the per-row log-sum-exp the backward needs.
  op.bytes = kBf16 * x.t * (2 * x.hq + 2 * x.hkv) / x.tp + kFp32 * x.b * heads * x.sq;
  return op;
}

bool is_weight_gradient(const Operation& op) {
  static const std::string suffix = "_wgrad";
  return op.kind == OpKind::gemm && op.batch == 1 && op.name.size() > suffix.size() &&
         op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<Operation> backward_of(const std::vector<Operation>& forward) {
  std::vector<Operation> ops;
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Operation& f = *it;
    if (f.kind == OpKind::fused_attention) {
      // Recomputes QK^T and the probabilities, then dV, dP, dQ, dK: five matmuls to the
      // forward's two. Reads Q, K, V, O, dO; writes dQ, dK, dV.
      Operation b = f;
      b.name = f.name + "_bwd";
      b.kind = OpKind::fused_attention_backward;
      b.flops = 2.5 * f.flops;
      b.bytes = 2 * f.bytes;
      b.kernels = f.backward_kernels > 0 ? f.backward_kernels : 1;
      b.backward_kernels = 0;
      ops.push_back(b);
    } else if (f.kind == OpKind::gemm) {
      // dX = dY * W^T  (m x k from m x n and n x k) and dW = X^T * dY (k x n from k x m, m x n).
      // Both accumulate in full precision whatever the forward's accumulation (fp8_linear.hpp).
      ops.push_back(make_gemm(f.name + "_dgrad", f.m, f.k, f.n, f.batch, f.dtype));
      ops.push_back(make_gemm(f.name + "_wgrad", f.k, f.n, f.m, f.batch, f.dtype));
      if (f.backward_kernels > 2) ops.back().kernels = f.backward_kernels - 1;
    } else {
      // Reads the saved input and the incoming gradient, writes the outgoing gradient.
      ops.push_back(make_elementwise(f.name + "_bwd", 1.5 * f.bytes, 2 * f.flops, backward_kernel(f)));
      if (f.backward_kernels > 0) ops.back().kernels = f.backward_kernels;
    }
  }
  return ops;
}

std::vector<Operation> layer_backward_ops(const TransformerSpec& s, const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_layer_backward(s, shape.micro_batch);
  const auto parts = layer_parts(s, shape);
  std::vector<Operation> ops;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    const auto b = it->own_backward ? it->backward : backward_of(it->forward);
    ops.insert(ops.end(), b.begin(), b.end());
  }
  return ops;
}

std::vector<Operation> layer_backward_ops(const TransformerSpec& s, long micro_batch) {
  return layer_backward_ops(s, LayerShape{micro_batch});
}

std::vector<Operation> embedding_forward_ops(const TransformerSpec& s, const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_embedding_forward(s, shape.micro_batch);
  Dims x = dims_of(s, shape);
  // An encoder-decoder looks up the encoder's and the decoder's tokens in the one shared table.
  if (is_encoder_decoder(s)) x.t = x.b * static_cast<double>(s.seq_len + decoder_tokens(s));
  // Gather token (and position) rows, add, norm, dropout.
  return {make_elementwise("embedding", 8 * x.t * x.h * kBf16 / x.sp, 10 * x.t * x.h / x.sp, "embedding")};
}

std::vector<Operation> embedding_forward_ops(const TransformerSpec& s, long micro_batch) {
  return embedding_forward_ops(s, LayerShape{micro_batch});
}

std::vector<Operation> head_forward_ops(const TransformerSpec& s, const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_head_forward(s, shape.micro_batch);
  Dims x = dims_of(s, shape);
  const double v = static_cast<double>(s.vocab) / x.tp;  // vocabulary-parallel under TP
  std::vector<Operation> ops;
  if (is_encoder_decoder(s)) {
    // The encoder's final norm (its output feeds every cross-attention) on the encoder's tokens;
    // the rest of the head runs on the decoder's.
    if (s.final_norm)
      ops.push_back(make_elementwise("encoder_final_norm", 2 * x.t * x.h * kBf16 / x.sp, 8 * x.t * x.h / x.sp, norm_kernel(s)));
    x.t = x.b * static_cast<double>(decoder_tokens(s));
  }
  if (s.final_norm) ops.push_back(make_elementwise("final_norm", 2 * x.t * x.h * kBf16 / x.sp, 8 * x.t * x.h / x.sp, norm_kernel(s)));
  if (s.mlm_head) {
    ops.push_back(make_gemm("mlm_transform", x.t, x.h, x.h, 1, Dtype::bf16));
    ops.push_back(make_elementwise("mlm_gelu_layernorm", 4 * x.t * x.h * kBf16, 16 * x.t * x.h));
  }
  // T5 v1.0 scales the decoder's output by d_model^-0.5 before a tied projection (Hugging Face
  // T5ForConditionalGeneration.forward: `sequence_output * (self.model_dim**-0.5)`).
  if (s.relative_position_bias && s.tied_embeddings)
    ops.push_back(make_elementwise("tied_head_scale", 2 * x.t * x.h * kBf16 / x.sp, x.t * x.h / x.sp));
  ops.push_back(make_gemm("vocab_projection", x.t, v, x.h, 1, Dtype::bf16));
  // Cross-entropy over the logits: softmax read + write in fp32.
  ops.push_back(make_elementwise("cross_entropy", 3 * x.t * v * kFp32, 5 * x.t * v));
  return ops;
}

std::vector<Operation> head_forward_ops(const TransformerSpec& s, long micro_batch) {
  return head_forward_ops(s, LayerShape{micro_batch});
}

std::vector<Operation> head_backward_ops(const TransformerSpec& s, const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_head_backward(s, shape.micro_batch);
  return backward_of(head_forward_ops(s, shape));
}

std::vector<Operation> embedding_backward_ops(const TransformerSpec& s, const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_embedding_backward(s, shape.micro_batch);
  return backward_of(embedding_forward_ops(s, shape));
}

std::vector<StoredTensor> layer_stored_activations(const TransformerSpec& s, const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_layer_saved(s, shape.micro_batch);
  const Dims x = dims_of(s, shape);
  const double sbh = x.t * x.h;
  const double heads = x.a / x.tp;
  const double s2 = x.b * heads * x.sq * x.sq;  // attention scores on this rank
  const double fr = x.f / x.tp;
  std::vector<StoredTensor> out;
  auto keep = [&](const char* name, double bytes) { out.push_back({name, bytes}); };
  // Eager module code (torchtitan, Hugging Face Llama) keeps more than the fused kernels do, as
  // measured on an H100 (validate/results/h100-activation-memory*.json: the allocator's history at
  // the peak, by source line; -35% per layer without these): RMSNorm saves its input upcast to
  // fp32 (x.float() feeds pow and the multiply) and the normalized bf16 tensor the weight
  // multiplies, the attention call saves K and V after repeat_kv (every query head's copy, not the
  // KV heads'), and SwiGLU's multiply saves silu(gate) beside gate and up.
  const bool eager = shape.eager;
  const bool eager_rms = eager && s.norm == NormKind::rmsnorm;
  const double norm_input = eager_rms ? kFp32 : kBf16;
  const double kv_saved = eager ? x.hq : x.hkv;
  // Attention block. Replicated under TP alone: the norm input, the QKV input, the mask.
  keep("norm_1_input", norm_input * sbh / x.sp);
  if (eager_rms) keep("norm_1_normalized", kBf16 * sbh / x.sp);
  // An FP8 linear keeps its input in FP8 (Transformer Engine: the transposed copy; torchao: the
  // cast input) instead of the bf16 tensor.
  const double lin = shape.fp8.enabled ? dtype_bytes(Dtype::fp8) : kBf16;
  keep("qkv_input", lin * sbh / x.sp);
  keep("q_k", kBf16 * x.t * (x.hq + kv_saved) / x.tp);
  keep("v", kBf16 * x.t * kv_saved / x.tp);
  // T5's attention keeps its softmax's fp32 output (softmax(scores.float())); the casts and the
  // bias add save nothing their backward needs.
  const double probabilities = s.relative_position_bias ? kFp32 : kBf16;
  auto unfused_core = [&](const std::string& prefix, double score_elements) {
    out.push_back({prefix + "softmax_output", probabilities * score_elements});
    if (s.dropout) {
      out.push_back({prefix + "attention_dropout_mask", kMask * score_elements});
      out.push_back({prefix + "attention_dropout_output", kBf16 * score_elements});
    }
  };
  if (shape.flash_attention) {
    keep("softmax_logsumexp", kFp32 * x.b * heads * x.sq);  // the fused kernel's only extra
  } else {
    unfused_core("", s2);
  }
  if (shape.fp8.enabled && shape.flash_attention) {
    // The attention kernel keeps its bf16 output for its backward, the projection its FP8 copy.
    keep("attention_output", kBf16 * sbh / x.tp);
    keep("attention_output_fp8", lin * sbh / x.tp);
  } else {
    keep("attention_output", lin * sbh / x.tp);  // input of the row-parallel projection
  }
  if (s.dropout) keep("attention_residual_mask", kMask * sbh / x.sp);
  if (x.sk > 0) {
    // Cross-attention: its norm's input, q's input, q, k and v of the encoder's tokens, the
    // scores' tensors, the output projection's input, the residual's mask.
    const double tk = x.b * x.sk;
    keep("cross_norm_input", norm_input * sbh / x.sp);
    keep("cross_q_input", lin * sbh / x.sp);
    keep("cross_q", kBf16 * x.t * x.hq / x.tp);
    keep("cross_k_v", kBf16 * tk * 2 * x.hkv / x.tp);
    unfused_core("cross_", x.b * heads * x.sq * x.sk);
    keep("cross_attention_output", lin * x.t * x.hq / x.tp);
    if (s.dropout) keep("cross_residual_mask", kMask * sbh / x.sp);
  }
  // MLP block.
  keep("norm_2_input", norm_input * sbh / x.sp);
  if (eager_rms) keep("norm_2_normalized", kBf16 * sbh / x.sp);
  keep("mlp_input", lin * sbh / x.sp);
  if (s.mlp == MlpKind::gelu) {
    keep("gelu_input", kBf16 * x.t * fr);
    keep("mlp_out_input", lin * x.t * fr);
  } else if (s.mlp == MlpKind::relu || s.mlp == MlpKind::geglu) {
    // T5: ReLU keeps its output (threshold_backward), GeGLU wi_0's and wi_1's outputs and the
    // GELU's (the product's inputs); then dropout's mask and output (wo's input).
    if (s.mlp == MlpKind::relu) {
      keep("relu_output", kBf16 * x.t * fr);
    } else {
      keep("gate_up_output", kBf16 * 2 * x.t * fr);
      keep("gelu_output", kBf16 * x.t * fr);
    }
    if (s.dropout) keep("ffn_dropout_mask", kMask * x.t * fr);
    keep("mlp_out_input", lin * x.t * fr);
  } else if (s.mlp == MlpKind::squared_relu) {
    // Its backward, 2 relu(x) dy, needs one f-column tensor (x compiled, relu(x) eager: pow saves
    // its input, threshold_backward relu's result, the same tensor), as GELU's.
    keep("squared_relu_input", kBf16 * x.t * fr);
    keep("mlp_out_input", lin * x.t * fr);
  } else {
    keep("gate_up_output", kBf16 * 2 * x.t * fr);
    if (eager) keep("silu_output", kBf16 * x.t * fr);
    keep("mlp_out_input", lin * x.t * fr);
  }
  if (s.dropout) keep("mlp_residual_mask", kMask * sbh / x.sp);
  return out;
}

std::vector<StoredTensor> embedding_stored_activations(const TransformerSpec& s,
                                                       const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_embedding_saved(s, shape.micro_batch);
  Dims x = dims_of(s, shape);
  if (is_encoder_decoder(s)) x.t = x.b * static_cast<double>(s.seq_len + decoder_tokens(s));  // both stacks' inputs
  std::vector<StoredTensor> out;
  if (s.embedding_norm) out.push_back({"embedding_norm_input", kBf16 * x.t * x.h / x.sp});
  if (s.dropout) out.push_back({"embedding_dropout_mask", kMask * x.t * x.h / x.sp});
  return out;
}

std::vector<StoredTensor> head_stored_activations(const TransformerSpec& s, const LayerShape& shape) {
  if (shape.module_kernels == ModuleKernels::hf_bert) return hf_bert_head_saved(s, shape.micro_batch);
  Dims x = dims_of(s, shape);
  const double v = static_cast<double>(s.vocab) / x.tp;
  std::vector<StoredTensor> out;
  if (is_encoder_decoder(s)) {
    // The encoder's final norm keeps its input; its output, the encoder's, is read by every
    // decoder block's cross k and v projections and kept once for their weight gradients.
    if (s.final_norm) out.push_back({"encoder_final_norm_input", kBf16 * x.t * x.h / x.sp});
    out.push_back({"encoder_output", kBf16 * x.t * x.h / x.sp});
    if (s.relative_position_bias) {
      // Hugging Face's T5Stack hands each block the [b, heads, s_q, s_k] position bias with the
      // mask added (`position_bias + mask`; the cross-attention's zeros + the encoder mask),
      // one per stack and one for cross-attention, alive through the forward and, under
      // activation checkpointing, saved as every checkpointed block's input. bf16.
      const double heads = x.a / x.tp, sq = x.sq, sd = static_cast<double>(decoder_tokens(s));
      out.push_back({"encoder_position_bias", kBf16 * x.b * heads * sq * sq});
      out.push_back({"decoder_position_bias", kBf16 * x.b * heads * sd * sd});
      out.push_back({"cross_position_bias", kBf16 * x.b * heads * sd * sq});
    }
    x.t = x.b * static_cast<double>(decoder_tokens(s));
  }
  if (s.final_norm) out.push_back({"final_norm_input", kBf16 * x.t * x.h / x.sp});
  if (s.mlm_head) out.push_back({"mlm_transform_activations", 3 * kBf16 * x.t * x.h});
  // Under sequence parallelism the projection keeps its input sharded along the sequence and
  // gathers it again for the weight gradient (Megatron-core tensor_parallel/layers.py:
  // LinearWithGradAccumulationAndAsyncCommunication saves `input`, not the gathered total_input).
  out.push_back({"vocab_projection_input", kBf16 * x.t * x.h / x.sp});
  // The projection keeps its input, not its output; the loss keeps what its backward reads:
  // PyTorch's cross-entropy upcasts the logits and keeps the fp32 log-probabilities, a fused
  // kernel keeps the bf16 logits and overwrites them with their gradient.
  if (shape.fused_cross_entropy)
    out.push_back({"logits", kBf16 * x.t * v});
  else
    out.push_back({"loss_log_probs_fp32", kFp32 * x.t * v});
  return out;
}

Bytes total_bytes(const std::vector<StoredTensor>& tensors) {
  Bytes b = 0;
  for (const auto& t : tensors) b += t.bytes;
  return b;
}

Bytes layer_input_bytes(const TransformerSpec& s, const LayerShape& shape) {
  // hf-bert's residual stream is fp32 (the LayerNorm outputs under autocast).
  const double element = shape.module_kernels == ModuleKernels::hf_bert ? 4.0 : 2.0;
  return element * static_cast<double>(shape.micro_batch * s.seq_len * s.hidden) /
         (shape.sequence_parallel ? static_cast<double>(shape.tp) : 1.0);
}

Bytes weight_gradient_inputs_bytes(const TransformerSpec& s, const LayerShape& shape) {
  const double t = static_cast<double>(shape.micro_batch * s.seq_len), tp = static_cast<double>(shape.tp);
  const double h = static_cast<double>(s.hidden), f = static_cast<double>(s.ffn_hidden);
  const double hkv = static_cast<double>(kv_heads_of(s)) * h / static_cast<double>(s.heads);
  const double up = gated(s.mlp) ? 2.0 : 1.0;  // gate and up share their input
  // Inputs: the norms' outputs (QKV, MLP in), the attention context, the MLP's activation;
  // output gradients: QKV, the attention projection, the MLP's in and out.
  const double inputs = h + h / tp + h + f / tp;
  const double output_gradients = (h + 2.0 * hkv) / tp + h + up * f / tp + h;
  return 2.0 * t * (inputs + output_gradients);
}

Bytes head_weight_gradient_inputs_bytes(const TransformerSpec& s, const LayerShape& shape) {
  const double t = static_cast<double>(shape.micro_batch * s.seq_len);
  return 2.0 * t * (static_cast<double>(s.hidden) + static_cast<double>(s.vocab) / static_cast<double>(shape.tp));
}

double model_flops_per_sequence(const TransformerSpec& s) {
  if (is_encoder_decoder(s)) {
    // The blocks' forward, backward twice the forward, and the output projection on the
    // decoder's tokens; the token table is only looked up.
    const double projection = 2.0 * static_cast<double>(s.vocab) * static_cast<double>(s.hidden) *
                              static_cast<double>(decoder_tokens(s));
    return 3.0 * (blocks_forward_flops_per_sequence(s) + projection);
  }
  const double sq = static_cast<double>(s.seq_len);
  const double h = static_cast<double>(s.hidden);
  const double l = static_cast<double>(s.layers);
  // Tables that are only looked up do no arithmetic: positions, and the token table when the
  // output projection has its own weights.
  double dense = parameter_count(s);
  if (s.learned_positions) dense -= sq * h;
  if (!s.tied_embeddings) dense -= static_cast<double>(s.vocab) * h;
  return 6.0 * dense * sq + 12.0 * l * h * sq * sq;
}

}  // namespace trainsim::model
