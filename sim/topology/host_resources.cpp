#include "topology/host_resources.hpp"

namespace trainsim::topology {

HostResources read_host_resources(JsonObject o) {
  HostResources h;
  h.vcpus = static_cast<int>(o.positive_integer("vcpus"));
  h.memory = o.quantity("memory", Dimension::bytes);
  if (o.has("local_nvme")) {
    JsonObject n = o.object("local_nvme");
    h.local_nvme_capacity = n.quantity("capacity", Dimension::bytes);
    h.local_nvme_read = n.quantity("read_bandwidth", Dimension::bandwidth);
    n.allow("source");
    n.finish();
  } else {
    o.allow("local_nvme");
  }
  h.source = o.string("source");
  o.finish();
  return h;
}

}  // namespace trainsim::topology
