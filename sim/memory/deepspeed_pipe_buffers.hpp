#pragma once
// What DeepSpeed's PipelineEngine itself keeps on a stage, beyond the model's saved tensors, as
// bigscience's Megatron-DeepSpeed (00f5f889, 2022-02-28: pretrain_gpt.py, GPTModelPipe) drives
// it at DeepSpeed fb0dc00f8 (v0.6.2's bf16 branch point; deepspeed/runtime/pipe/engine.py and
// runtime/utils.py PartitionedTensor). Read from the code, nothing fitted:
//  - per micro-batch in flight on a stage that sends (every stage but the last): the stage's
//    output stays in pipe_buffers['outputs'] until its backward (engine.py 678, freed 767-768).
//    Under TP > 1 (is_pipe_partitioned = model_parallel_size > 1, engine.py 131) the full output
//    is dropped (`first_output.data = torch.zeros(1)`, 672) and a clone of this TP rank's 1/TP
//    slice kept (utils.py _partition_tensor: narrow(...).clone()); under TP 1 the output itself.
//    The model's checkpointed layers save only their inputs, so the stage's last output is not
//    among them.
//  - at a backward on such a stage, under TP > 1: the output restored whole
//    (`output_tensors[buffer_id].data = part_output.full()`, 732) and the received gradient
//    made whole (`part_grad.full()`, 746), both referenced until the pass ends (767-769).
//  - resident: on such a stage the gradient receive buffer (grad_layer, one, allocated at the
//    first _exec_recv_grads, 1100-1129: the 1/TP slice and its meta, or the whole gradient
//    under TP 1); on every stage but the first the activation receive buffer (pipe_recv_buf,
//    1042: the same sizes); on the first stage the loaded inputs of each pipe buffer
//    (_exec_load_micro_batch 779-801 clones get_batch_pipe's (tokens, position_ids,
//    attention_mask) onto the device and keeps them until the buffer is loaded again: int64
//    b x s twice, the bool 1 x 1 x s x s causal mask; reset_attention_mask off), of which
//    TrainSchedule has max(2, min(pp - stage + 1, micro-batches)) (schedule.py 243-247); on the
//    last stage each buffer's labels (int64 b x s) and loss mask (fp32 b x s); and on every
//    rank the model's args.attn_mask (pretrain_gpt.py model_provider: a bool 1 x 1 x s x s, so
//    the mask is not sent between stages: EmbeddingPipe returns the hidden states only).
// Not counted: the partition metas (a few int64) and the forward's clones of the loaded inputs
// (freed when the forward returns; the embedding keeps b x s int64 and bool masks, < 0.1 MB).
#include <string>

#include "core/units.hpp"
#include "model/transformer.hpp"
#include "plan/training_plan.hpp"

namespace trainsim::memory {

struct DeepSpeedPipeBuffers {
  Bytes per_micro_batch = 0;  ///< kept from a forward to its backward
  Bytes backward = 0;         ///< held through a backward pass, beside the layer's workspace
  Bytes resident = 0;         ///< allocated once, kept
  std::string per_micro_batch_how, backward_how, resident_how;
};

/// Zero unless the plan runs DeepSpeed's pipeline engine with more than one stage.
DeepSpeedPipeBuffers deepspeed_pipe_buffers(const model::TransformerSpec& s, const plan::TrainingPlan& p, long stage);

}  // namespace trainsim::memory
