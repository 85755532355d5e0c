#include "model/composer_metric_sync.hpp"

namespace trainsim::model {

ComposerMetricSync composer_metric_sync(int metrics, long world_size) {
  ComposerMetricSync s;
  const long states = static_cast<long>(metrics) * kComposerMetricStates;
  s.fills = states * world_size;
  s.copies = states * world_size;
  s.host_syncs = metrics > 0 ? 2 + states : 0;
  return s;
}

Seconds composer_metric_sync_host_time(int metrics, long world_size, Seconds per_call) {
  return static_cast<double>(composer_metric_sync(metrics, world_size).calls()) * per_call;
}

}  // namespace trainsim::model
