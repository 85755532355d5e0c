#pragma once
// A scenario: a topology, a model, a training configuration and the points (node counts) to
// simulate, with the published reference for each point where one exists. Loaded from
// scenarios/*.json (schema_version 1); cross-file checks happen here, before anything is built.
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/rank_list.hpp"
#include "collective/collective_calibration.hpp"
#include "collective/collective_plan.hpp"
#include "model/device_profile.hpp"
#include "memory/rank_memory.hpp"
#include "model/transformer.hpp"
#include "pipeline/pipeline_config.hpp"
#include "plan/training_plan.hpp"
#include "program/data_parallel_schedule.hpp"
#include "topology/topology.hpp"

namespace trainsim::scenario {

/// The hardware a point runs on: a topology with the device profile and collective calibration
/// it names. Shared by the points that run on it.
struct Machine {
  topology::Topology topology;
  model::DeviceProfile device;
  collective::CollectiveCalibration collectives;
};

/// One configuration to simulate. A point may override any field of the scenario's "model" and
/// "training" objects (its own "model" / "training" objects are merged over them), so one file
/// can hold a table whose rows differ in model and degrees.
struct Point {
  std::string label;  ///< e.g. "8 instances"
  int nodes = 1;
  std::optional<double> reference_samples_per_s;
  std::optional<double> reference_tflops_per_accelerator;
  /// A published lower bound on TFLOP/s per accelerator ("more than 173"), where the source gives
  /// no point measurement: judged met or missed, never counted as an error (report/reference_bound).
  std::optional<double> reference_tflops_per_accelerator_at_least;
  bool fitted = false;  ///< named in a calibration's "fitted" rows
  std::optional<Bytes> storage_capacity;  ///< FSx capacity for this point (data pipeline only)
  /// Where this point's data comes from when it differs from the scenario's "data.storage.kind",
  /// so one file can compare FSx with local NVMe for the same job.
  std::optional<pipeline::SourceKind> storage_kind;
  /// The scenario's machine, or the one named by the point's own "topology", so one file can
  /// hold a table measured on several instance types.
  std::shared_ptr<const Machine> machine;
  model::TransformerSpec model;
  plan::TrainingPlan training;
  collective::TunerOverride collectives;  ///< training.collectives: forced algorithm / protocol
  bool sm_sharing = true;  ///< training.collectives.sm_sharing: collectives take SMs from compute
  bool hbm_sharing = true;  ///< training.collectives.hbm_sharing: and device-memory bandwidth
  plan::Layout layout;
};

struct Scenario {
  std::string file;
  std::string name;
  std::string title;
  std::string reference_source;
  std::vector<std::string> assumptions;
  std::shared_ptr<const Machine> machine;  ///< the scenario's "topology" (points may name their own)
  model::TransformerSpec model;   ///< the scenario-level model (points may override it)
  plan::TrainingPlan training;    ///< the scenario-level plan (points may override it)
  std::vector<Point> points;
  std::optional<pipeline::PipelineConfig> data;  ///< the input pipeline, when simulated
  /// Run option, not read from the file: simulate one representative per class of identical
  /// ranks (program/rank_folding.hpp). `trainsim run --no-fold` turns it off to check it.
  bool fold_symmetric_ranks = true;
  /// Run option: the ranks a trace keeps (`trainsim run --trace-ranks`); every rank when all().
  RankList trace_ranks;
};

/// Loads a scenario and everything it references; ConfigError on any bad input.
[[nodiscard]] Scenario load_scenario(const std::string& path);

/// Loads a scenario from an already-parsed document (a sweep's variant of a file); `path` is
/// the file it came from: errors name it and relative references resolve against it.
[[nodiscard]] Scenario load_scenario_document(const nlohmann::json& doc, const std::string& path);

/// The data-parallel schedule's configuration for one point (world size from its node count).
[[nodiscard]] program::DataParallelConfig training_for(const Scenario& s, const Point& p);

/// The memory model's inputs for one point: its model, plan and layout on this topology.
[[nodiscard]] memory::MemoryInputs memory_inputs(const Scenario& s, const Point& p);

}  // namespace trainsim::scenario
