#include "memory/caching_allocator.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace trainsim::memory {

namespace {
// CUDACachingAllocator.cpp's constants.
constexpr Bytes kMinBlockSize = 512;
constexpr Bytes kSmallSize = 1 << 20;       // largest request of the small pool
constexpr Bytes kSmallBuffer = 2 << 20;     // the small pool's segments
constexpr Bytes kLargeBuffer = 20 << 20;    // segments of requests between 1 and 10 MiB
constexpr Bytes kMinLargeAlloc = 10 << 20;
constexpr Bytes kRoundLarge = 2 << 20;

Bytes round_up(Bytes size, Bytes multiple) { return std::ceil(size / multiple) * multiple; }
}  // namespace

CachingAllocator::CachingAllocator(Bytes capacity, Bytes max_split_size)
    : capacity_(capacity), max_split_size_(max_split_size) {}

Bytes CachingAllocator::rounded(Bytes size) { return std::max(kMinBlockSize, round_up(size, kMinBlockSize)); }

Bytes CachingAllocator::segment_size(Bytes rounded_size) {
  if (rounded_size <= kSmallSize) return kSmallBuffer;
  if (rounded_size < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded_size, kRoundLarge);
}

Bytes CachingAllocator::block_size(int block) const { return blocks_.at(static_cast<std::size_t>(block)).size; }

CachingAllocator::PoolKey CachingAllocator::key_of(int id) const {
  const Block& b = blocks_[static_cast<std::size_t>(id)];
  return {b.stream, b.small, b.size, b.address, id};
}

int CachingAllocator::new_block(const Block& b) {
  if (!unused_ids_.empty()) {
    const int id = unused_ids_.back();
    unused_ids_.pop_back();
    blocks_[static_cast<std::size_t>(id)] = b;
    return id;
  }
  blocks_.push_back(b);
  return static_cast<int>(blocks_.size()) - 1;
}

int CachingAllocator::find_free(Bytes size, int stream, bool small) const {
  const auto it = pool_.lower_bound({stream, small, size, -1, -1});
  if (it == pool_.end() || std::get<0>(*it) != stream || std::get<1>(*it) != small) return -1;
  const Bytes found = std::get<2>(*it);
  // get_free_block: no oversized block for a request on the other side of max_split_size.
  if (size < max_split_size_ && found >= max_split_size_) return -1;
  if (size >= max_split_size_ && found >= size + kLargeBuffer) return -1;
  return std::get<4>(*it);
}

int CachingAllocator::reserve_segment(Bytes size, int stream, bool small) {
  const Bytes segment = segment_size(size);
  if (reserved_ + segment > capacity_) return -1;
  reserved_ += segment;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  Block b;
  b.address = next_address_;
  b.size = segment;
  b.stream = stream;
  b.small = small;
  next_address_ += segment;
  return new_block(b);
}

AllocationOutcome CachingAllocator::retry_and_reserve(Bytes size, int stream, bool small) {
  AllocationOutcome out;
  synchronize();
  // release_cached_blocks: every cached block that is a whole segment (no neighbours).
  for (auto it = pool_.begin(); it != pool_.end();) {
    const int id = std::get<4>(*it);
    Block& b = blocks_[static_cast<std::size_t>(id)];
    if (b.prev < 0 && b.next < 0) {
      reserved_ -= b.size;
      out.released += b.size;
      ++out.segments_released;
      unused_ids_.push_back(id);
      it = pool_.erase(it);
    } else {
      ++it;
    }
  }
  ++retries_;
  out.retried = true;
  out.block = reserve_segment(size, stream, small);
  if (out.block < 0) {
    out.out_of_memory = true;
    ++ooms_;
  }
  return out;
}

AllocationOutcome CachingAllocator::malloc(Bytes size, int stream) {
  AllocationOutcome out;
  if (size <= 0) return out;
  const Bytes want = rounded(size);
  const bool small = want <= kSmallSize;
  int id = find_free(want, stream, small);
  if (id >= 0) {
    pool_.erase(key_of(id));
  } else {
    id = reserve_segment(want, stream, small);
    if (id < 0) {
      out = retry_and_reserve(want, stream, small);
      if (out.out_of_memory) return out;
      id = out.block;
    }
  }
  Block& b = blocks_[static_cast<std::size_t>(id)];
  const Bytes rest = b.size - want;
  const bool split = small ? rest >= kMinBlockSize : (want < max_split_size_ && rest > kSmallSize);
  if (split) {
    Block tail = b;
    tail.address = b.address + want;
    tail.size = rest;
    tail.prev = id;
    tail.allocated = false;
    const int next = b.next;
    const int tail_id = new_block(tail);  // may move blocks_: no reference to b kept below
    blocks_[static_cast<std::size_t>(tail_id)].next = next;
    if (next >= 0) blocks_[static_cast<std::size_t>(next)].prev = tail_id;
    blocks_[static_cast<std::size_t>(id)].next = tail_id;
    blocks_[static_cast<std::size_t>(id)].size = want;
    pool_.insert(key_of(tail_id));
  }
  Block& got = blocks_[static_cast<std::size_t>(id)];
  got.allocated = true;
  allocated_ += got.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  out.block = id;
  return out;
}

void CachingAllocator::free(int block) {
  Block& b = blocks_.at(static_cast<std::size_t>(block));
  TRAINSIM_CHECK(b.allocated && !b.pending, "caching allocator: block freed twice");
  b.allocated = false;
  allocated_ -= b.size;
  return_to_pool(block);
}

void CachingAllocator::free_after_use(int block) {
  Block& b = blocks_.at(static_cast<std::size_t>(block));
  TRAINSIM_CHECK(b.allocated && !b.pending, "caching allocator: block freed twice");
  b.allocated = false;
  b.pending = true;
  allocated_ -= b.size;
  pending_.insert(block);
}

void CachingAllocator::complete(int block) {
  if (pending_.erase(block) == 0) return;  // already returned by a synchronize
  blocks_[static_cast<std::size_t>(block)].pending = false;
  return_to_pool(block);
}

void CachingAllocator::synchronize() {
  const std::vector<int> waiting(pending_.begin(), pending_.end());
  for (int id : waiting) complete(id);
}

void CachingAllocator::return_to_pool(int id) {
  // free_block: merge with free (cached, not pending) neighbours of the same segment.
  auto mergeable = [&](int n) {
    return n >= 0 && !blocks_[static_cast<std::size_t>(n)].allocated && !blocks_[static_cast<std::size_t>(n)].pending;
  };
  Block& b = blocks_[static_cast<std::size_t>(id)];
  if (mergeable(b.prev)) {
    const int p = b.prev;
    pool_.erase(key_of(p));
    Block& pb = blocks_[static_cast<std::size_t>(p)];
    b.address = pb.address;
    b.size += pb.size;
    b.prev = pb.prev;
    if (b.prev >= 0) blocks_[static_cast<std::size_t>(b.prev)].next = id;
    unused_ids_.push_back(p);
  }
  if (mergeable(b.next)) {
    const int n = b.next;
    pool_.erase(key_of(n));
    Block& nb = blocks_[static_cast<std::size_t>(n)];
    b.size += nb.size;
    b.next = nb.next;
    if (b.next >= 0) blocks_[static_cast<std::size_t>(b.next)].prev = id;
    unused_ids_.push_back(n);
  }
  pool_.insert(key_of(id));
}

}  // namespace trainsim::memory
