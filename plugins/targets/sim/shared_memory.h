// SharedMemory: the Smem buffers of the block being simulated, with the bookkeeping that turns
// CUDA's undefined behaviour into errors:
//   * an "initialized" bit per element (reading an element no thread wrote is an error);
//   * race tracking per barrier epoch: the thread that wrote the element and up to two threads
//     that read it since the last Sync(); a write by one thread and any access by another in the
//     same epoch is a race;
//   * cp.async: copies issued by a thread join its open group, CpAsyncCommit closes the group,
//     CpAsyncWait(keep=N) lands all but the newest N committed groups (as writes by the issuing
//     thread); reading or writing an element with a copy still in flight is an error, and so is
//     issuing a copy into an element another thread read or wrote since the last Sync() (the copy
//     may land at once: a ring slot refilled while its readers may still read it);
//   * a ring-buffered Smem (slots > 1) is named with its slot in every report;
//   * mbarriers and TMA copies: a TMA copy's elements are in flight from the copy until the
//     phase of its barrier slot completes (all `count` arrivals in, and the transaction bytes the
//     arrivals announced equal to the bytes of the copies tracked); the phase completes at the
//     first wait for it, where the copies land (visible to every thread that waited on that phase,
//     and to every thread after the next Sync()). A wait for a phase that cannot complete (an
//     arrival or copy missing, or bytes announced that no copy moves) is an error, as is reading
//     an element whose copy is in flight, reading a landed element without having waited on its
//     phase, refilling an element another thread accessed since the last Sync(), and ending the
//     block with a copy in flight.
//   * distributed shared memory (a thread-block cluster's blocks read each other's Smem with
//     DsmemLoad; the block executor runs a cluster's blocks from one ClusterSync to the next): a
//     remote read of an element its block wrote (or started a copy into) in the same cluster
//     phase, or a write after a remote read in the same phase, is a race; so is a remote read of an
//     uninitialized element or of one with a copy in flight.
//   * ordering without Sync() (warp-specialized kernels, whose roles never share a barrier of the
//     whole block): with order_by_barriers(), an access by another thread since the last Sync()
//     is no race when it happened before this thread's access through barriers: its thread
//     arrived on an mbarrier phase (or a named barrier) after the access, and this thread waited
//     on that phase (or passed that named barrier) since. One step of that relation is tracked
//     (what a thread learns from a phase is who arrived in it, not what they had learned);
//   * a wgmma's shared-memory operands are read until the WgmmaWait that completes it: writing or
//     refilling an element a product in flight reads is a race, and the read counts as the
//     reader's at the wait (an mbarrier arrival between the product and its wait orders nothing).
// Every check returns an error message ("" when the access is fine); the block executor adds the
// kernel, statement and thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernel_program.h"

namespace tessera::sim {

class SharedMemory {
 public:
  // `thread_name(lane)` spells a thread of the block for messages, e.g. "(3, 0, 0)".
  SharedMemory(const std::vector<SmemDecl>& decls, const std::vector<BarrierDecl>& barriers, int lanes,
               std::function<std::string(int)> thread_name);

  // A new block: every element uninitialized, no access history, no copies in flight.
  void reset();
  // Sync(): accesses before it no longer race with accesses after it.
  void barrier() { ++epoch_; }
  // ClusterSync(): a barrier of the block, and the cluster's phase ends: remote reads before it no
  // longer race with this block's writes after it, and its writes before it are visible to the
  // remote reads after it.
  void cluster_barrier() {
    ++cluster_phase_;
    barrier();
  }
  // A DsmemLoad of the element by the block of rank `reader` in the cluster (this block's own rank
  // included), in the current phase.
  std::string remote_read(int buffer, int64_t flat, int64_t reader, double& value);

  int64_t size(int buffer) const { return static_cast<int64_t>(buffers_[static_cast<size_t>(buffer)].data.size()); }
  const SmemDecl& decl(int buffer) const { return buffers_[static_cast<size_t>(buffer)].decl; }
  // "x_smem[1, 7]"
  std::string element_str(int buffer, int64_t flat) const;

  std::string read(int buffer, int64_t flat, int lane, double& value);
  std::string write(int buffer, int64_t flat, int lane, const SimStmt& at, double value);

  // cp.async: `value` was read from global memory when the copy was issued.
  std::string issue_copy(int buffer, int64_t flat, int lane, const SimStmt& at, double value);
  void commit_copies(int lane);
  std::string wait_copies(int lane, int64_t keep);

  // A wgmma product reads the element (read() checked it) until end_async_read, by `lane` (its
  // warpgroup's first thread), which then counts as its reader.
  void begin_async_read(int buffer, int64_t flat);
  void end_async_read(int buffer, int64_t flat, int lane);

  // Tracks the orders barriers give without a Sync() (above); costs lanes^2 counters.
  void order_by_barriers();
  // A named barrier completes: each of `lanes` arrived after its accesses so far, and each has
  // seen the others arrive.
  void synchronize_lanes(const std::vector<int>& lanes);

  // MbarrierInit (every thread of the block; the block synchronizes after it): every slot of
  // barrier ring `barrier` starts phase 0 expecting its count of arrivals.
  std::string init_barrier(int barrier);
  // An arrival by `lane` on slot `slot`, announcing `tx` more bytes of transactions.
  std::string arrive(int barrier, int64_t slot, int64_t tx, int lane);
  // One element of a TMA copy tracked by `barrier`'s slot `slot` (`value` was read when the copy
  // was issued; the caller adds the copy's bytes with tma_bytes once per copy).
  std::string issue_tma_element(int buffer, int64_t flat, int lane, const SimStmt& at, double value, int barrier,
                                int64_t slot);
  void tma_bytes(int barrier, int64_t slot, int64_t bytes);
  // Whether a wait for the phase of parity `parity` of the slot would end now: the phase has
  // completed, or can (every arrival in and the bytes announced moved). True for a wait
  // wait_barrier refuses (uninitialized barrier, bad parity), so that it reports why.
  bool phase_ready(int barrier, int64_t slot, int64_t parity);
  // `lane` waits for the phase of parity `parity` of the slot: completes it first when it is the
  // current phase (an error when it cannot complete), then records that the lane observed it.
  std::string wait_barrier(int barrier, int64_t slot, int64_t parity, int lane);
  // "" when the slot index is inside the ring; else the error.
  std::string check_barrier_slot(int barrier, int64_t slot) const;
  // The block's end: an error when a TMA copy is still in flight.
  std::string finish_block() const;

 private:
  struct Element {
    uint64_t epoch = 0;           // the barrier epoch the access history below belongs to
    int32_t writer = -1;          // lane that wrote it in that epoch
    int32_t reader0 = -1, reader1 = -1;  // up to two distinct lanes that read it in that epoch
    int64_t writer_stamp = 0, reader0_stamp = 0, reader1_stamp = 0;  // their arrival counts then
    int32_t async_reads = 0;      // wgmma products in flight that read it
    bool initialized = false;
    int32_t pending = 0;          // cp.async copies in flight into it
    bool tma_pending = false;     // the copy in flight is a TMA copy
    int32_t landed_barrier = -1;  // this epoch: the barrier slot (flat) whose phase landed it, or -1
    int64_t landed_phase = 0;     // ... and the phase count it landed at
    const SimStmt* writer_stmt = nullptr;
    uint64_t write_phase = 0;        // the cluster phase of the block's last write or copy into it
    uint64_t remote_read_phase = 0;  // the cluster phase of the last DsmemLoad of it ...
    int64_t remote_reader = -1;      // ... by the block of this rank
  };
  struct Buffer {
    SmemDecl decl;
    std::vector<double> data;
    std::vector<Element> state;
  };
  struct PendingCopy {
    int buffer;
    int64_t flat;
    double value;
    const SimStmt* stmt;
  };
  struct ThreadCopies {
    std::vector<PendingCopy> open;
    std::deque<std::vector<PendingCopy>> committed;
  };
  struct BarrierSlot {
    bool initialized = false;
    int64_t arrivals_missing = 0;  // in the current phase
    int64_t tx_announced = 0;      // bytes the current phase's arrivals announced
    int64_t tx_issued = 0;         // bytes of the copies it tracks
    int64_t phases = 0;            // completed phases (the current phase's parity is phases % 2)
    std::vector<PendingCopy> copies;
    std::vector<int64_t> observed;  // per lane: the phases it has seen complete
    // order_by_barriers: (lane, its arrival count) of the current phase's arrivals and of the last
    // completed phase's, which its waiters learn.
    std::vector<std::pair<int, int64_t>> arrivals, last_arrivals;
  };
  BarrierSlot& slot_of(int barrier, int64_t slot) {
    return barriers_[static_cast<size_t>(barrier_base_[static_cast<size_t>(barrier)] + slot)];
  }
  std::string barrier_str(int barrier, int64_t slot) const;

  Element& touch(int buffer, int64_t flat);
  // Whether `accessor`'s access when it had arrived `stamp` times is ordered before `lane`'s now.
  bool ordered(int accessor, int64_t stamp, int lane) const {
    return accessor == lane ||
           (!known_.empty() && known_[static_cast<size_t>(lane) * static_cast<size_t>(lanes_) + static_cast<size_t>(accessor)] > stamp);
  }
  int64_t stamp(int lane) const { return known_.empty() ? 0 : arrivals_made_[static_cast<size_t>(lane)]; }
  void note_reader(Element& e, int lane);
  // The other thread's access (since the last barrier, not ordered before `lane`'s) a write or copy
  // by `lane` would race with: "thread T wrote it (at `...`)" / "thread T read it", or "".
  std::string unordered_access(const Element& e, int lane) const;
  // With order_by_barriers, the rest of a race message: what else would have ordered the accesses.
  std::string unordered_by_barriers() const {
    return known_.empty() ? std::string()
                          : " and no barrier ordering it first (an mbarrier phase this thread waited on, or a named "
                            "barrier it passed, that the other thread reached after its access)";
  }
  // The race an asynchronous copy (`copy`: "cp.async", "a TMA copy") into the element by `lane`
  // would be, or "".
  std::string refill_race(const Element& e, int buffer, int64_t flat, int lane, std::string_view copy) const;
  // A write or copy by this block into the element: the race with a remote read in the same
  // cluster phase, or "" (then the write is recorded for the remote reads after it).
  std::string cluster_write(Element& e, int buffer, int64_t flat);

  std::vector<Buffer> buffers_;
  std::vector<ThreadCopies> copies_;  // per lane
  std::function<std::string(int)> thread_name_;
  std::vector<BarrierDecl> barrier_decls_;
  std::vector<int64_t> barrier_base_;  // per barrier ring: its first slot in barriers_
  std::vector<BarrierSlot> barriers_;
  int lanes_;
  std::vector<int64_t> arrivals_made_;  // order_by_barriers: per lane, its barrier arrivals so far
  std::vector<int64_t> known_;          // [lane * lanes + other]: the most arrivals of other that lane has seen
  uint64_t epoch_ = 1;
  uint64_t cluster_phase_ = 1;
};

}  // namespace tessera::sim
