#pragma once
// A least-recently-used cache of byte-sized items keyed by integer id (files in page caches
// and file-server memory).
#include <cstdint>
#include <list>
#include <unordered_map>

#include "core/units.hpp"

namespace trainsim::pipeline {

class LruCache {
public:
  explicit LruCache(Bytes capacity) : capacity_(capacity) {}

  /// Returns whether `id` was cached, and caches it (evicting the least recently used).
  bool access(std::int64_t id, Bytes size) {
    auto it = index_.find(id);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return true;
    }
    if (size > capacity_) return false;
    while (used_ + size > capacity_ && !order_.empty()) {
      const auto& [victim, victim_size] = order_.back();
      used_ -= victim_size;
      index_.erase(victim);
      order_.pop_back();
    }
    order_.emplace_front(id, size);
    index_[id] = order_.begin();
    used_ += size;
    return false;
  }

private:
  Bytes capacity_;
  Bytes used_ = 0;
  std::list<std::pair<std::int64_t, Bytes>> order_;
  std::unordered_map<std::int64_t, std::list<std::pair<std::int64_t, Bytes>>::iterator> index_;
};

}  // namespace trainsim::pipeline
