// SharedMemory: per-block Smem contents with initialization, race and cp.async tracking
// (see shared_memory.h).
#include "shared_memory.h"

#include <algorithm>
#include <utility>

namespace tessera::sim {

SharedMemory::SharedMemory(const std::vector<SmemDecl>& decls, const std::vector<BarrierDecl>& barriers, int lanes,
                           std::function<std::string(int)> thread_name)
    : copies_(static_cast<size_t>(lanes)), thread_name_(std::move(thread_name)), barrier_decls_(barriers), lanes_(lanes) {
  for (const BarrierDecl& b : barriers) {
    barrier_base_.push_back(static_cast<int64_t>(barriers_.size()));
    for (int64_t i = 0; i < b.slots; ++i) barriers_.push_back(BarrierSlot{});
  }
  for (const SmemDecl& d : decls) {
    int64_t n = 1;
    for (int64_t e : d.shape) n *= e;
    buffers_.push_back(Buffer{d, std::vector<double>(static_cast<size_t>(n), 0.0), std::vector<Element>(static_cast<size_t>(n))});
  }
}

void SharedMemory::reset() {
  for (Buffer& b : buffers_) std::fill(b.state.begin(), b.state.end(), Element{});
  for (ThreadCopies& t : copies_) {
    t.open.clear();
    t.committed.clear();
  }
  for (BarrierSlot& b : barriers_) b = BarrierSlot{};
  std::fill(arrivals_made_.begin(), arrivals_made_.end(), 0);
  std::fill(known_.begin(), known_.end(), 0);
  ++epoch_;
  cluster_phase_ = 1;
}

std::string SharedMemory::element_str(int buffer, int64_t flat) const {
  const SmemDecl& d = decl(buffer);
  std::vector<int64_t> index(d.shape.size(), 0);
  for (size_t i = d.shape.size(); i-- > 0;) {
    index[i] = flat % d.shape[i];
    flat /= d.shape[i];
  }
  std::string s = d.name + "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  s += "]";
  if (d.slots > 1 && !index.empty()) s += " (slot " + std::to_string(index[0]) + " of the ring)";
  return s;
}

SharedMemory::Element& SharedMemory::touch(int buffer, int64_t flat) {
  Element& e = buffers_[static_cast<size_t>(buffer)].state[static_cast<size_t>(flat)];
  if (e.epoch != epoch_) {  // a barrier since its last access: forget who touched it
    e.epoch = epoch_;
    e.writer = -1;
    e.reader0 = e.reader1 = -1;
    e.writer_stmt = nullptr;
    e.landed_barrier = -1;  // a barrier orders the landing before every later access
  }
  return e;
}

void SharedMemory::order_by_barriers() {
  arrivals_made_.assign(static_cast<size_t>(lanes_), 0);
  known_.assign(static_cast<size_t>(lanes_) * static_cast<size_t>(lanes_), 0);
}

void SharedMemory::synchronize_lanes(const std::vector<int>& lanes) {
  if (known_.empty()) return;
  for (int l : lanes) ++arrivals_made_[static_cast<size_t>(l)];
  for (int p : lanes)
    for (int r : lanes) {
      int64_t& k = known_[static_cast<size_t>(p) * static_cast<size_t>(lanes_) + static_cast<size_t>(r)];
      k = std::max(k, arrivals_made_[static_cast<size_t>(r)]);
    }
}

void SharedMemory::note_reader(Element& e, int lane) {
  if (e.reader0 == lane) e.reader0_stamp = stamp(lane);
  else if (e.reader1 == lane) e.reader1_stamp = stamp(lane);
  else if (e.reader0 < 0) e.reader0 = lane, e.reader0_stamp = stamp(lane);
  else if (e.reader1 < 0) e.reader1 = lane, e.reader1_stamp = stamp(lane);
  // A third reader is not recorded: a write by another thread conflicts with one of the first two.
}

std::string SharedMemory::unordered_access(const Element& e, int lane) const {
  if (e.writer >= 0 && !ordered(e.writer, e.writer_stamp, lane))
    return "thread " + thread_name_(e.writer) + " wrote it (at `" + stmt_text(*e.writer_stmt->source) + "`)";
  if (e.reader0 >= 0 && !ordered(e.reader0, e.reader0_stamp, lane)) return "thread " + thread_name_(e.reader0) + " read it";
  if (e.reader1 >= 0 && !ordered(e.reader1, e.reader1_stamp, lane)) return "thread " + thread_name_(e.reader1) + " read it";
  return {};
}

void SharedMemory::begin_async_read(int buffer, int64_t flat) {
  ++buffers_[static_cast<size_t>(buffer)].state[static_cast<size_t>(flat)].async_reads;
}

void SharedMemory::end_async_read(int buffer, int64_t flat, int lane) {
  --buffers_[static_cast<size_t>(buffer)].state[static_cast<size_t>(flat)].async_reads;
  note_reader(touch(buffer, flat), lane);
}

std::string SharedMemory::read(int buffer, int64_t flat, int lane, double& value) {
  Element& e = touch(buffer, flat);
  if (e.pending > 0 && e.tma_pending)
    return "read before its barrier phase completes: " + element_str(buffer, flat) + " has a TMA copy in flight";
  if (e.pending > 0)
    return "read before cp.async wait: " + element_str(buffer, flat) + " has a cp.async copy in flight";
  if (!e.initialized) return "reads uninitialized shared element " + element_str(buffer, flat);
  if (e.landed_barrier >= 0 && barriers_[static_cast<size_t>(e.landed_barrier)].observed[static_cast<size_t>(lane)] < e.landed_phase) {
    int ring = 0;
    while (ring + 1 < static_cast<int>(barrier_base_.size()) && barrier_base_[static_cast<size_t>(ring + 1)] <= e.landed_barrier) ++ring;
    return "reads " + element_str(buffer, flat) + ", which a TMA copy completing on " +
           barrier_str(ring, e.landed_barrier - barrier_base_[static_cast<size_t>(ring)]) +
           " wrote, without waiting on that barrier's phase (or a Sync() after a thread that did)";
  }
  if (e.writer >= 0 && !ordered(e.writer, e.writer_stamp, lane))
    return "race on " + element_str(buffer, flat) + ": thread " + thread_name_(e.writer) + " wrote it (at `" +
           stmt_text(*e.writer_stmt->source) + "`) and this thread reads it with no Sync() in between" +
           unordered_by_barriers();
  note_reader(e, lane);
  value = buffers_[static_cast<size_t>(buffer)].data[static_cast<size_t>(flat)];
  return {};
}

std::string SharedMemory::write(int buffer, int64_t flat, int lane, const SimStmt& at, double value) {
  Element& e = touch(buffer, flat);
  if (e.pending > 0)
    return "writes " + element_str(buffer, flat) + " while a " + (e.tma_pending ? "TMA" : "cp.async") +
           " copy into it is in flight";
  if (e.async_reads > 0)
    return "race on " + element_str(buffer, flat) + ": a wgmma.mma_async in flight reads it and this thread writes it "
           "(no WgmmaWait completed the product first)";
  if (std::string other = unordered_access(e, lane); !other.empty())
    return "race on " + element_str(buffer, flat) + ": " + other + " and this thread writes it with no Sync() in between" +
           unordered_by_barriers();
  if (e.landed_barrier >= 0) {
    if (barriers_[static_cast<size_t>(e.landed_barrier)].observed[static_cast<size_t>(lane)] < e.landed_phase)
      return "writes " + element_str(buffer, flat) + ", which a TMA copy wrote, without waiting on its barrier's phase";
    e.landed_barrier = -1;
  }
  if (std::string race = cluster_write(e, buffer, flat); !race.empty()) return race;
  e.writer = lane;
  e.writer_stamp = stamp(lane);
  e.writer_stmt = &at;
  e.reader0 = e.reader1 = -1;  // ordered before this write (checked above)
  e.initialized = true;
  Buffer& b = buffers_[static_cast<size_t>(buffer)];
  b.data[static_cast<size_t>(flat)] = round_to_storage(value, b.decl.dtype);
  return {};
}

std::string SharedMemory::refill_race(const Element& e, int buffer, int64_t flat, int lane, std::string_view copy) const {
  // An asynchronous copy may land at any moment until its wait, so it conflicts with every access
  // by another thread since the last barrier, as a write would (a slot refilled before its readers
  // passed a Sync()), unless barriers ordered that access first.
  if (e.async_reads > 0)
    return "race on " + element_str(buffer, flat) + ": a wgmma.mma_async in flight reads it and this thread refills it with " +
           std::string(copy) + " (no WgmmaWait completed the product first)";
  if (std::string other = unordered_access(e, lane); !other.empty())
    return "race on " + element_str(buffer, flat) + ": " + other + " and this thread refills it with " + std::string(copy) +
           " with no Sync() in between" + unordered_by_barriers();
  return {};
}

std::string SharedMemory::cluster_write(Element& e, int buffer, int64_t flat) {
  if (e.remote_read_phase == cluster_phase_)
    return "race on " + element_str(buffer, flat) + ": the block of rank " + std::to_string(e.remote_reader) +
           " in the cluster reads it (DsmemLoad) and this thread writes it with no ClusterSync() in between";
  e.write_phase = cluster_phase_;
  return {};
}

std::string SharedMemory::remote_read(int buffer, int64_t flat, int64_t reader, double& value) {
  // Not touch(): the owner's per-epoch history is about its own threads.
  Element& e = buffers_[static_cast<size_t>(buffer)].state[static_cast<size_t>(flat)];
  if (e.pending > 0)
    return "reads " + element_str(buffer, flat) + " of another block while a " + (e.tma_pending ? "TMA" : "cp.async") +
           " copy into it is in flight";
  if (!e.initialized) return "reads uninitialized shared element " + element_str(buffer, flat) + " of another block";
  if (e.write_phase == cluster_phase_)
    return "race on " + element_str(buffer, flat) + ": its block writes it and this thread reads it (DsmemLoad) with "
           "no ClusterSync() in between";
  e.remote_read_phase = cluster_phase_;
  e.remote_reader = reader;
  value = buffers_[static_cast<size_t>(buffer)].data[static_cast<size_t>(flat)];
  return {};
}

std::string SharedMemory::issue_copy(int buffer, int64_t flat, int lane, const SimStmt& at, double value) {
  Element& e = touch(buffer, flat);
  if (e.pending > 0)
    return "starts a cp.async into " + element_str(buffer, flat) + " while another copy into it is in flight";
  if (e.landed_barrier >= 0) e.landed_barrier = -1;
  if (std::string race = refill_race(e, buffer, flat, lane, "cp.async"); !race.empty()) return race;
  if (std::string race = cluster_write(e, buffer, flat); !race.empty()) return race;
  ++e.pending;
  copies_[static_cast<size_t>(lane)].open.push_back(PendingCopy{buffer, flat, value, &at});
  return {};
}

void SharedMemory::commit_copies(int lane) {
  ThreadCopies& t = copies_[static_cast<size_t>(lane)];
  t.committed.push_back(std::move(t.open));  // an empty group still counts, as in CUDA
  t.open.clear();
}

std::string SharedMemory::wait_copies(int lane, int64_t keep) {
  ThreadCopies& t = copies_[static_cast<size_t>(lane)];
  while (static_cast<int64_t>(t.committed.size()) > keep) {
    for (const PendingCopy& c : t.committed.front()) {
      --touch(c.buffer, c.flat).pending;
      std::string err = write(c.buffer, c.flat, lane, *c.stmt, c.value);  // the copy lands: a write by its issuer
      if (!err.empty()) return err;
    }
    t.committed.pop_front();
  }
  return {};
}

// ---- mbarriers and TMA ------------------------------------------------------------------------

std::string SharedMemory::barrier_str(int barrier, int64_t slot) const {
  const BarrierDecl& d = barrier_decls_[static_cast<size_t>(barrier)];
  return d.slots > 1 ? d.name + "[" + std::to_string(slot) + "]" : d.name;
}

std::string SharedMemory::check_barrier_slot(int barrier, int64_t slot) const {
  const BarrierDecl& d = barrier_decls_[static_cast<size_t>(barrier)];
  if (slot >= 0 && slot < d.slots) return {};
  return "barrier slot " + std::to_string(slot) + " of '" + d.name + "' is outside its " + std::to_string(d.slots) +
         " slot(s)";
}

std::string SharedMemory::init_barrier(int barrier) {
  const BarrierDecl& d = barrier_decls_[static_cast<size_t>(barrier)];
  for (int64_t i = 0; i < d.slots; ++i) {
    BarrierSlot& b = slot_of(barrier, i);
    if (!b.copies.empty()) return "initializes " + barrier_str(barrier, i) + " while a TMA copy it tracks is in flight";
    b = BarrierSlot{};
    b.initialized = true;
    b.arrivals_missing = d.count;
    b.observed.assign(static_cast<size_t>(lanes_), 0);
  }
  return {};
}

std::string SharedMemory::arrive(int barrier, int64_t slot, int64_t tx, int lane) {
  BarrierSlot& b = slot_of(barrier, slot);
  if (!b.initialized) return "arrives on " + barrier_str(barrier, slot) + " before its MbarrierInit";
  if (b.arrivals_missing == 0)
    return "arrives on " + barrier_str(barrier, slot) + " after all " +
           std::to_string(barrier_decls_[static_cast<size_t>(barrier)].count) +
           " arrivals of its current phase (no thread waited for the phase to complete)";
  --b.arrivals_missing;
  b.tx_announced += tx;
  if (!known_.empty()) b.arrivals.emplace_back(lane, ++arrivals_made_[static_cast<size_t>(lane)]);
  return {};
}

std::string SharedMemory::issue_tma_element(int buffer, int64_t flat, int lane, const SimStmt& at, double value,
                                            int barrier, int64_t slot) {
  BarrierSlot& b = slot_of(barrier, slot);
  if (!b.initialized) return "starts a TMA copy tracked by " + barrier_str(barrier, slot) + " before its MbarrierInit";
  Element& e = touch(buffer, flat);
  if (e.pending > 0)
    return "starts a TMA copy into " + element_str(buffer, flat) + " while another copy into it is in flight";
  if (std::string race = refill_race(e, buffer, flat, lane, "a TMA copy"); !race.empty()) return race;
  if (std::string race = cluster_write(e, buffer, flat); !race.empty()) return race;
  e.writer = e.reader0 = e.reader1 = -1;  // the accesses so far are ordered before the copy (checked above)
  ++e.pending;
  e.tma_pending = true;
  b.copies.push_back(PendingCopy{buffer, flat, value, &at});
  return {};
}

void SharedMemory::tma_bytes(int barrier, int64_t slot, int64_t bytes) { slot_of(barrier, slot).tx_issued += bytes; }

bool SharedMemory::phase_ready(int barrier, int64_t slot, int64_t parity) {
  BarrierSlot& b = slot_of(barrier, slot);
  if (!b.initialized || (parity != 0 && parity != 1) || b.phases % 2 != parity) return true;
  return b.arrivals_missing == 0 && b.tx_announced == b.tx_issued;
}

std::string SharedMemory::wait_barrier(int barrier, int64_t slot, int64_t parity, int lane) {
  BarrierSlot& b = slot_of(barrier, slot);
  if (!b.initialized) return "waits on " + barrier_str(barrier, slot) + " before its MbarrierInit";
  if (parity != 0 && parity != 1) return "waits for phase parity " + std::to_string(parity) + ", which is neither 0 nor 1";
  if (b.phases % 2 == parity) {  // the phase waited for is the current one: it must complete now
    const std::string what = "waits on " + barrier_str(barrier, slot) + " for its phase of parity " +
                             std::to_string(parity) + ", which cannot complete (in CUDA the block would hang): ";
    if (b.arrivals_missing > 0)
      return what + std::to_string(b.arrivals_missing) + " of " +
             std::to_string(barrier_decls_[static_cast<size_t>(barrier)].count) + " arrivals are missing";
    if (b.tx_announced != b.tx_issued)
      return what + "its arrivals announced " + std::to_string(b.tx_announced) + " transaction bytes and its TMA copies move " +
             std::to_string(b.tx_issued);
    const int64_t flat_slot = barrier_base_[static_cast<size_t>(barrier)] + slot;
    ++b.phases;
    for (const PendingCopy& c : b.copies) {
      Element& e = touch(c.buffer, c.flat);
      --e.pending;
      e.tma_pending = false;
      e.initialized = true;
      e.writer = -1;  // written by the copy engine: visible to the phase's waiters, no thread owns it
      e.writer_stmt = nullptr;
      e.landed_barrier = static_cast<int32_t>(flat_slot);
      e.landed_phase = b.phases;
      Buffer& buf = buffers_[static_cast<size_t>(c.buffer)];
      buf.data[static_cast<size_t>(c.flat)] = round_to_storage(c.value, buf.decl.dtype);
    }
    b.copies.clear();
    b.arrivals_missing = barrier_decls_[static_cast<size_t>(barrier)].count;
    b.tx_announced = b.tx_issued = 0;
    b.last_arrivals = std::move(b.arrivals);
    b.arrivals.clear();
  }
  int64_t& seen = b.observed[static_cast<size_t>(lane)];
  seen = std::max(seen, b.phases);
  for (const auto& [arriver, count] : b.last_arrivals) {  // only filled with order_by_barriers()
    int64_t& k = known_[static_cast<size_t>(lane) * static_cast<size_t>(lanes_) + static_cast<size_t>(arriver)];
    k = std::max(k, count);
  }
  return {};
}

std::string SharedMemory::finish_block() const {
  for (size_t r = 0; r < barrier_decls_.size(); ++r)
    for (int64_t i = 0; i < barrier_decls_[r].slots; ++i) {
      const BarrierSlot& b = barriers_[static_cast<size_t>(barrier_base_[r] + i)];
      if (!b.copies.empty())
        return "the block ends with a TMA copy into " + element_str(b.copies.front().buffer, b.copies.front().flat) +
               " in flight (no thread waited on " + barrier_str(static_cast<int>(r), i) + ")";
    }
  return {};
}

}  // namespace tessera::sim
