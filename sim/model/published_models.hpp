#pragma once
// Architectures of published models that tests and validation tools check the model layer
// against, each from its release; scenarios describe their models in JSON instead.
#include "model/transformer.hpp"

namespace trainsim::model {

/// Llama-3 8B (Meta's params.json; torchtitan's llama3_configs["8B"]: dim 4096, 32 layers, 32
/// heads, 8 KV heads, FFN 14336 = 1024 x ceil(1.3 x 2/3 x 4 x 4096 / 1024), vocab 128,256, RMSNorm,
/// SwiGLU, RoPE, no biases, untied output): 8,030,261,248 parameters.
[[nodiscard]] TransformerSpec llama3_8b(long seq_len = 8192);

/// T5-11B (Raffel et al. 2020, Table 14; Hugging Face google-t5/t5-11b config.json: d_model 1024,
/// 24 + 24 blocks, 128 heads x d_kv 128, d_ff 65536 ReLU, vocab 32,128, T5's RMS norm, relative
/// position bias, no biases, tied head), encoder seq 512 and the decoder's tokens given apart, as
/// the scenario reader builds it.
[[nodiscard]] TransformerSpec t5_11b(long decoder_seq_len = 512);

}  // namespace trainsim::model
