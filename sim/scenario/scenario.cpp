#include "scenario/scenario.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "core/paths.hpp"
#include "core/json_reader.hpp"
#include "model/encoder_decoder.hpp"
#include "scenario/pipeline_reader.hpp"
#include "scenario/model_reader.hpp"
#include "scenario/training_reader.hpp"

namespace trainsim::scenario {

namespace {


/// `base` with `patch`'s keys replaced recursively (RFC 7396 merge without deletion).
nlohmann::json merged(nlohmann::json base, const nlohmann::json& patch) {
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it.value().is_object() && base.contains(it.key()) && base[it.key()].is_object())
      base[it.key()] = merged(base[it.key()], it.value());
    else
      base[it.key()] = it.value();
  }
  return base;
}

/// The topology `topo_file` (named at `o`'s "topology") with its device profile and collective
/// calibration.
std::shared_ptr<const Machine> load_machine(const std::string& topo_file, JsonObject& o) {
  auto m = std::make_shared<Machine>();
  try {
    m->topology = topology::load_topology(topo_file);
  } catch (const ConfigError& e) {
    if (e.file() == topo_file && e.json_path().empty() && !std::filesystem::exists(topo_file))
      o.fail("topology", "topology file not found: " + topo_file);
    throw;
  }
  m->device = model::load_device_profile(m->topology.accelerator.device_file);
  if (m->topology.calibration_file.empty())
    o.fail("topology", "topology " + topo_file + " names no collective_calibration");
  m->collectives = collective::load_collective_calibration(m->topology.calibration_file);
  return m;
}

/// training.attention_kernel must name one of the point's device profile's kernels.
void check_attention_kernel(const plan::TrainingPlan& t, const model::DeviceProfile& dev, const JsonObject& po) {
  if (t.attention_kernel.empty()) return;
  std::string names;
  for (const auto& k : dev.attention_kernels) {
    if (k.name == t.attention_kernel) return;
    names += (names.empty() ? "" : ", ") + k.name;
  }
  po.fail("training", "attention_kernel \"" + t.attention_kernel + "\" is not a fused attention kernel of " +
                          dev.file + " (" + (names.empty() ? "it has none" : "it has " + names) + ")");
}

/// An encoder-decoder's two kinds of blocks are modelled in the sharded schedule (FSDP) and the
/// memory model it uses, one unit per block, without model parallelism and with the attention
/// written out (T5's relative position bias is added to the scores; no fused kernel takes it).
void check_encoder_decoder(const plan::TrainingPlan& t, const model::TransformerSpec& m, const JsonObject& po) {
  if (!model::is_encoder_decoder(m)) return;
  const auto fail = [&](const std::string& what) {
    po.fail("training", "architecture \"t5\" (an encoder-decoder) is modelled " + what);
  };
  if ((t.sharding != plan::Sharding::fsdp && t.sharding != plan::Sharding::zero3) ||
      t.zero3_implementation == plan::Zero3Implementation::deepspeed_0_3)
    fail("in the sharded schedule only (schedule fsdp, or zero3 as fsdp)");
  if (t.tp > 1 || t.pp > 1 || t.cp > 1)
    fail("without tensor, pipeline or context parallelism (tensor_parallel, pipeline_parallel, context_parallel 1)");
  if (t.flash_attention) fail("with its attention written out (flash_attention false): no fused kernel adds its position bias");
  if (t.activation_checkpointing && (t.checkpoint_policy != plan::CheckpointPolicy::full || t.activation_offloading))
    fail("with full activation checkpointing only (no selective policy, no activation_offloading)");
  if (t.linear_precision == plan::LinearPrecision::fp8 || t.fsdp_float8_all_gather) fail("in bf16 only (no FP8)");
  if (t.allocator_tensor_requests || t.composer_train_metrics > 0)
    fail("without allocator_tensor_requests or composer_train_metrics (their tensors are a single stack's)");
}

/// FP8 linear layers run at the device's measured fp8 GEMM rate: a profile without fp8 samples
/// (an A100 or a Gaudi has no FP8 tensor cores, an H100 profile may simply lack the file) is an
/// error here, not a silent bf16 rate.
// hf-bert's op lists are BertForMaskedLM's (model/hf_bert_ops.hpp): a post-LN, biased GELU
// encoder with learned positions and the MLM head.
void check_hf_bert(const plan::TrainingPlan& t, const model::TransformerSpec& m, const JsonObject& po) {
  if (t.module_kernels == plan::ModuleKernels::hf_bert &&
      (!m.mlm_head || m.causal || !m.bias || !m.learned_positions || m.mlp != model::MlpKind::gelu ||
       m.norm != model::NormKind::layernorm || kv_heads_of(m) != m.heads))
    po.fail("training", "module_kernels hf-bert is Hugging Face's BertForMaskedLM: needs a BERT model (mlm_head, "
                        "bias, layernorm, gelu, learned positions, multi-head, not causal)");
}

void check_fp8(const plan::TrainingPlan& t, const model::DeviceProfile& dev, const JsonObject& po) {
  if (t.linear_precision != plan::LinearPrecision::fp8) return;
  if (model::gemm_curve(dev, model::Dtype::fp8) != nullptr) return;
  po.fail("training", "linear_precision \"fp8\" needs fp8 GEMM samples in the device profile's kernel "
                      "calibrations, and " + dev.file + " has none (an accelerator without FP8 tensor cores, "
                      "e.g. A100 or Gaudi, cannot run it; an H100 profile names them in \"gemm_calibrations\")");
}

/// Retry stalls come from PyTorch's CUDA caching allocator, which a profile without its retry cost
/// (Gaudi) does not run.
void check_allocator(const plan::TrainingPlan& t, const model::DeviceProfile& dev, const JsonObject& po) {
  if (!t.allocator_retry_stalls || dev.caching_allocator()) return;
  po.fail("training", "allocator_retry_stalls needs PyTorch's CUDA caching allocator, and " + dev.file +
                      " gives no allocator_retry cost (its framework's allocator is not modelled)");
}

/// A schema-1 calibration (HCCL on DL1) plans all_reduce, reduce_scatter and all_gather only
/// (collective/collective_plan.cpp); the schedules that need another collective are rejected
/// here, before the point is simulated, rather than failing inside the simulation.
void check_collective_library(const plan::TrainingPlan& t, const collective::CollectiveCalibration& cal,
                              const JsonObject& po) {
  if (cal.schema_version >= 2) return;
  const char* needs = t.pp > 1                             ? "pipeline_parallel > 1 sends activations between stages (send_recv)"
                      : t.cp > 1                           ? "context_parallel > 1 exchanges keys and values in a ring (ring_exchange)"
                      : t.tp_comm_overlap                  ? "tp_comm_overlap runs ring exchanges over the TP group (ring_exchange)"
                      : t.megatron_step_syncs && t.tp > 1 ? "megatron_step_syncs with tensor_parallel > 1 broadcasts each batch over TP"
                                                           : nullptr;
  if (needs == nullptr) return;
  po.fail("training", std::string(needs) + ", but " + cal.library + " (" + cal.file +
                          ", schema_version 1) plans all_reduce, reduce_scatter and all_gather only");
}

}  // namespace

Scenario load_scenario(const std::string& path) {
  return load_scenario_document(read_json_file(path), path);
}

Scenario load_scenario_document(const nlohmann::json& doc, const std::string& path) {
  JsonObject root = root_object(doc, path);
  root.require_schema_version(1);
  Scenario s;
  s.file = path;
  s.name = root.string("name");
  s.title = root.string("title");
  root.allow("description");
  s.assumptions = root.has("assumptions") ? root.string_array("assumptions")
                                          : (root.allow("assumptions"), std::vector<std::string>{});
  // Machines by resolved topology file: points naming the same file share one.
  std::map<std::string, std::shared_ptr<const Machine>> machines;
  auto machine_at = [&](JsonObject& o) {
    const std::string topo_file = relative_to(path, o.string("topology"));
    auto& m = machines[topo_file];
    if (!m) m = load_machine(topo_file, o);
    return m;
  };
  s.machine = machine_at(root);
  s.model = read_model(root.object("model"));
  s.training = read_training(root.object("training"));
  const auto scenario_collectives = read_collectives(root.object("training"), s.machine->collectives);
  const bool scenario_sm_sharing = read_sm_sharing(root.object("training"));
  const bool scenario_hbm_sharing = read_hbm_sharing(root.object("training"));
  if (root.has("data")) s.data = read_pipeline(root.object("data"), path, s.machine->topology);
  else root.allow("data");
  {
    JsonObject ref = root.object("reference");
    s.reference_source = ref.string("source");
    ref.allow("note");
    ref.allow("table");
    ref.finish();
  }

  // A row is fitted when its machine's device or collective calibration names it as a fitting
  // input ("scenario#label").
  auto is_fitted = [&](const Machine& m, const std::string& label) {
    const std::string key = s.name + "#" + label;
    auto named = [&](const std::vector<std::string>& rows) {
      return std::find(rows.begin(), rows.end(), key) != rows.end();
    };
    return named(m.collectives.fitted_rows) ||
           std::any_of(m.device.fitted.begin(), m.device.fitted.end(),
                       [&](const auto& f) { return named(f.rows); });
  };
  auto points = root.object_array("points");
  if (points.empty()) root.fail("points", "expected at least one point");
  for (std::size_t i = 0; i < points.size(); ++i) {
    auto& po = points[i];
    const auto& raw = doc["points"][i];
    Point p;
    if (po.has("topology")) {
      if (s.data) po.fail("topology", "a scenario with a \"data\" section runs every point on its own topology");
      p.machine = machine_at(po);
    } else {
      po.allow("topology");
      p.machine = s.machine;
    }
    const auto& topo = p.machine->topology;
    const long per_node = static_cast<long>(topo.accelerators().size());
    p.nodes = static_cast<int>(po.positive_integer("nodes"));
    p.label = po.string_or("label", std::to_string(p.nodes) + (p.nodes == 1 ? " instance" : " instances"));
    auto reference = [&](const char* key, std::optional<double>& out) {
      if (!po.has(key)) return po.allow(key);
      const double r = po.number(key);
      if (r <= 0) po.fail(key, "expected a positive value");
      out = r;
    };
    reference("reference_samples_per_s", p.reference_samples_per_s);
    reference("reference_tflops_per_accelerator", p.reference_tflops_per_accelerator);
    reference("reference_tflops_per_accelerator_at_least", p.reference_tflops_per_accelerator_at_least);
    if (p.reference_tflops_per_accelerator && p.reference_tflops_per_accelerator_at_least)
      po.fail("reference_tflops_per_accelerator_at_least",
              "a point has either a measured TFLOP/s per accelerator (reference_tflops_per_accelerator) or a "
              "lower bound on it, not both");
    // A point's own "model" / "training" objects are merged over the scenario's.
    const std::string at = "/points/" + std::to_string(i);
    p.model = s.model;
    if (raw.contains("model")) {
      const auto m = merged(doc["model"], raw["model"]);
      p.model = read_model(JsonObject(m, path, at + "/model"));
    }
    po.allow("model");
    p.training = s.training;
    p.collectives = raw.contains("topology")
                        ? read_collectives(root.object("training"), p.machine->collectives)
                        : scenario_collectives;
    p.sm_sharing = scenario_sm_sharing;
    p.hbm_sharing = scenario_hbm_sharing;
    if (raw.contains("training")) {
      const auto t = merged(doc["training"], raw["training"]);
      p.training = read_training(JsonObject(t, path, at + "/training"));
      p.collectives = read_collectives(JsonObject(t, path, at + "/training"), p.machine->collectives);
      p.sm_sharing = read_sm_sharing(JsonObject(t, path, at + "/training"));
      p.hbm_sharing = read_hbm_sharing(JsonObject(t, path, at + "/training"));
    }
    po.allow("training");
    check_attention_kernel(p.training, p.machine->device, po);
    check_fp8(p.training, p.machine->device, po);
    check_encoder_decoder(p.training, p.model, po);
    check_allocator(p.training, p.machine->device, po);
    check_hf_bert(p.training, p.model, po);
    check_collective_library(p.training, p.machine->collectives, po);
    try {
      p.layout = plan::layout_of(p.training, p.nodes * per_node, per_node);
    } catch (const std::invalid_argument& e) {
      po.fail("nodes", std::string(e.what()) + " (" + std::to_string(p.nodes) + " x " +
                           topo.name + ")");
    }
    // Megatron places TP ranks consecutively and lets a TP group span nodes (the paper's Figure 13
    // runs TP 16 and 32 on 8-GPU nodes); its collectives then cross the inter-node fabric. The
    // collective model needs the same number of a group's ranks on every node it spans.
    if (p.training.tp > per_node && p.training.tp % per_node != 0)
      po.fail("nodes", "tensor parallelism (" + std::to_string(p.training.tp) +
                           ") across nodes must span whole nodes of " + std::to_string(per_node) + " accelerators");
    if (p.model.layers < p.training.pp)
      po.fail("nodes", "pipeline degree " + std::to_string(p.training.pp) + " exceeds the " +
                           std::to_string(p.model.layers) + " layers");
    if (p.training.cp > 1) {
      // Transformer Engine splits each rank's sequence into two chunks for the causal load
      // balance (2 x CP chunks in all: attention.py AttnFuncWithCPAndKVP2P asserts the per-GPU
      // length is even), and sequence parallelism splits a CP rank's tokens over the TP group.
      const long cp = p.training.cp;
      if (p.model.seq_len % (2 * cp) != 0)
        po.fail("training", "context_parallel " + std::to_string(cp) + " splits the sequence into 2 x CP = " +
                                std::to_string(2 * cp) + " chunks, which must divide seq_len " +
                                std::to_string(p.model.seq_len));
      else if (p.training.sequence_parallel && (p.model.seq_len / cp) % p.training.tp != 0)
        po.fail("training", "a context-parallel rank's " + std::to_string(p.model.seq_len / cp) +
                                " tokens must divide over the tensor-parallel degree " + std::to_string(p.training.tp) +
                                " (sequence parallelism)");
      // The all-to-alls trade sequence shards for head shards: a TP rank's heads and KV heads
      // must divide over the CP group.
      const long heads = p.model.heads / p.training.tp, kv_heads = model::kv_heads_of(p.model) / p.training.tp;
      if (p.training.cp_comm == plan::CpCommType::a2a && (heads % cp != 0 || kv_heads % cp != 0))
        po.fail("training", "cp_comm_type a2a splits a tensor-parallel rank's " + std::to_string(heads) + " heads and " +
                                std::to_string(kv_heads) + " KV heads over context_parallel " + std::to_string(cp) +
                                ", which must divide both");
    }
    if (p.model.heads % p.training.tp != 0)
      po.fail("nodes", "tensor-parallel degree " + std::to_string(p.training.tp) +
                           " does not divide the " + std::to_string(p.model.heads) + " heads");
    if (p.training.activation_offloading &&
        std::none_of(topo.vertices.begin(), topo.vertices.end(),
                     [](const topology::Vertex& v) { return v.kind == topology::VertexKind::cpu; }))
      po.fail("training", "activation offloading copies layer inputs to host memory over PCIe, but topology " +
                              topo.name + " has no vertex of kind cpu");
    if (po.has("data_parallel_degree")) {
      const long dp = po.positive_integer("data_parallel_degree");
      if (dp != p.layout.dp)
        po.fail("data_parallel_degree",
                "data-parallel degree " + std::to_string(dp) + " does not match the " +
                    std::to_string(p.layout.dp) + " = " + std::to_string(p.layout.world) +
                    " accelerators of " + std::to_string(p.nodes) + " x " + topo.name +
                    " / (tensor " + std::to_string(p.training.tp) +
                    (p.training.cp > 1 ? " x context " + std::to_string(p.training.cp) : std::string()) + " x pipeline " +
                    std::to_string(p.training.pp) + ")");
    } else {
      po.allow("data_parallel_degree");
    }
    if (s.data) {
      // Who reads the data must divide it into equal shares (pipeline/data_readers.hpp).
      try {
        (void)point_readers(*s.data, p.training, p.layout);
      } catch (const std::invalid_argument& e) {
        po.fail("nodes", std::string("the input pipeline's readers (data.readers or the framework's rule): ") + e.what());
      }
    }
    if (po.has("storage_kind")) {
      if (!s.data) po.fail("storage_kind", "only a scenario with a \"data\" section has a data source");
      const auto kind = po.choice("storage_kind", {"fsx_lustre", "local_nvme"});
      if (kind == "local_nvme") {
        check_local_nvme(*s.data, topo, po, "storage_kind");
        p.storage_kind = pipeline::SourceKind::local_nvme;
      } else {
        if (s.data->source != pipeline::SourceKind::fsx)
          po.fail("storage_kind", "FSx needs the scenario's \"data.storage\" to describe the file system");
        p.storage_kind = pipeline::SourceKind::fsx;
      }
    } else {
      po.allow("storage_kind");
    }
    if (po.has("storage_capacity")) {
      if (!s.data || s.data->source != pipeline::SourceKind::fsx ||
          p.storage_kind == pipeline::SourceKind::local_nvme)
        po.fail("storage_capacity", "only a point whose data comes from FSx has a storage capacity");
      p.storage_capacity = po.quantity("storage_capacity", Dimension::bytes);
      check_fsx_capacity(*s.data, *p.storage_capacity, po, "storage_capacity");
    } else {
      po.allow("storage_capacity");
    }
    po.allow("note");
    po.finish();
    p.fitted = is_fitted(*p.machine, p.label);
    s.points.push_back(p);
  }
  root.finish();
  return s;
}

program::DataParallelConfig training_for(const Scenario& s, const Point& p) {
  (void)s;
  return program::data_parallel_config(p.training, p.layout);
}

memory::MemoryInputs memory_inputs(const Scenario& s, const Point& p) {
  (void)s;
  return {p.model, p.training, p.layout, p.machine->topology.accelerator.memory,
          p.machine->device.runtime_reserve};
}

}  // namespace trainsim::scenario
