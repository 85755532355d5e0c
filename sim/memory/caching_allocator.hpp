#pragma once
// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, expandable_segments off,
// its default), as plain data: what a rank *reserves* from the device, where the engine and the
// memory model count what it *allocates*.
//
// The rules followed, each from that file:
//  - a request is rounded up to 512 B (round_size); up to 1 MiB it is served from the small pool,
//    whose segments are 2 MiB; a 1-10 MiB request gets a 20 MiB segment; larger ones a segment
//    of the request rounded up to 2 MiB (get_allocation_size);
//  - cached free blocks belong to the stream that allocated them (BlockPool ordered by stream,
//    then size; get_free_block takes the smallest free block of the request's stream and pool
//    that is large enough): memory freed by a communication stream cannot serve compute;
//  - a block larger than the request is split when the rest is >= 512 B (small pool) or > 1 MiB
//    (large pool, below max_split_size); a freed block merges with free neighbours of its
//    segment; with max_split_size set, a request below it takes no block above it and a request
//    above it no block more than 20 MiB larger;
//  - a block freed while another stream still uses it (record_stream) returns to its pool only
//    when that stream's work is done (insert_events / process_events): `free_after_use` then
//    `complete`;
//  - when no cached block fits and reserving a new segment would pass the capacity
//    (set_per_process_memory_fraction, or the device's free memory), the allocator waits for
//    every pending use (synchronize_and_free_events), returns every cached segment that holds no
//    allocated block to the device (release_cached_blocks: cudaFree), counts a retry
//    (num_alloc_retries) and reserves again; if that fails too, the request is out of memory.
#include <cstdint>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include "core/units.hpp"

namespace trainsim::memory {

/// What a request returns. `block` is -1 when the request was out of memory (or for 0 bytes).
struct AllocationOutcome {
  int block = -1;
  bool retried = false;       ///< cached segments were freed and the reservation tried again
  Bytes released = 0;         ///< bytes of cached segments returned to the device by the retry
  int segments_released = 0;  ///< how many segments (each one cudaFree)
  bool out_of_memory = false; ///< still no room after the retry
};

class CachingAllocator {
public:
  /// `capacity`: the most bytes the allocator may reserve (device memory less what it does not
  /// manage). `max_split_size`: PYTORCH_CUDA_ALLOC_CONF's max_split_size_mb in bytes, unlimited
  /// by default.
  explicit CachingAllocator(Bytes capacity, Bytes max_split_size = std::numeric_limits<Bytes>::infinity());

  /// Allocates `size` bytes for work on `stream` (any small integer naming one of the rank's streams).
  AllocationOutcome malloc(Bytes size, int stream);
  /// The block's tensor is dead and no other stream uses it: back to its stream's pool now.
  void free(int block);
  /// The block's tensor is dead but another stream may still use it (record_stream): it stops
  /// counting as allocated and stays reserved, unusable, until `complete`.
  void free_after_use(int block);
  /// The other stream's work on a block freed by `free_after_use` is done: back to its pool.
  void complete(int block);
  /// Every pending use done (a device synchronize).
  void synchronize();

  [[nodiscard]] Bytes allocated() const { return allocated_; }  ///< rounded sizes of live blocks
  [[nodiscard]] Bytes reserved() const { return reserved_; }    ///< segments held from the device
  [[nodiscard]] Bytes peak_allocated() const { return peak_allocated_; }
  [[nodiscard]] Bytes peak_reserved() const { return peak_reserved_; }
  [[nodiscard]] long retries() const { return retries_; }
  [[nodiscard]] long out_of_memory_count() const { return ooms_; }
  [[nodiscard]] Bytes capacity() const { return capacity_; }
  /// The rounded size of a live or cached block.
  [[nodiscard]] Bytes block_size(int block) const;

  /// PyTorch's round_size: at least 512 B, in multiples of 512 B.
  [[nodiscard]] static Bytes rounded(Bytes size);
  /// PyTorch's get_allocation_size: the segment reserved for a rounded request no cached block serves.
  [[nodiscard]] static Bytes segment_size(Bytes rounded_size);

private:
  struct Block {
    Bytes address = 0;
    Bytes size = 0;
    int stream = 0;
    bool small = false;
    bool allocated = false;
    bool pending = false;  ///< freed under record_stream, waiting for the other stream
    int prev = -1, next = -1;  ///< neighbours in the same segment
  };
  using PoolKey = std::tuple<int, bool, Bytes, Bytes, int>;  // stream, small, size, address, id

  [[nodiscard]] PoolKey key_of(int id) const;
  int find_free(Bytes size, int stream, bool small) const;
  int reserve_segment(Bytes size, int stream, bool small);
  AllocationOutcome retry_and_reserve(Bytes size, int stream, bool small);
  void return_to_pool(int id);
  int new_block(const Block& b);

  Bytes capacity_;
  Bytes max_split_size_;
  std::vector<Block> blocks_;
  std::vector<int> unused_ids_;
  std::set<PoolKey> pool_;   ///< free cached blocks
  std::set<int> pending_;    ///< blocks waiting for another stream
  Bytes next_address_ = 0;
  Bytes allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  long retries_ = 0, ooms_ = 0;
};

}  // namespace trainsim::memory
