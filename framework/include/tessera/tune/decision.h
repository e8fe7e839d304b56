// Decisions: the identity of one knob decision, and a decision taken.
//
// A decision is keyed by what it is about, never by when it is asked: the kernel it shapes (its
// structural hash up to buffer names, taken when the pass first asks about the node), the pass,
// the knob, and an ordinal (the pass's n-th ask of that knob on that node, for passes that decide
// a knob more than once per kernel). Sources answer by key, so kernel sharing and parallel pass
// applications stay on while a tuner or a replay is attached, equal kernels get equal answers,
// and a decision found for one layer's kernel applies to every layer's.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/attr.h"

namespace tessera {

struct DecisionKey {
  uint64_t kernel = 0;  // kernel_structural_hash of the node (pass/kernel_identity.h)
  std::string pass;     // "launch_geometry"
  std::string knob;     // "BN"
  int ordinal = 0;      // the pass's ordinal-th ask of this knob on this kernel, from 0

  // "launch_geometry.BN@9f3c0a1b2c3d4e5f" (with "#2" appended when the ordinal is not 0).
  std::string str() const;
  friend auto operator<=>(const DecisionKey&, const DecisionKey&) = default;
  friend bool operator==(const DecisionKey&, const DecisionKey&) = default;
};

// SplitMix64's finalizer: a bijection spreading every input bit over the output, for deriving
// seeds and draws from hashes (stable across platforms, unlike std::hash).
uint64_t hash_mix(uint64_t x);

// FNV-1a of `text`, continuing from `h`: the stable hash of text that kernel identities, pipeline
// hashes and keyed random draws are built from (tuning databases store them).
inline constexpr uint64_t kHashTextStart = 1469598103934665603ull;
uint64_t hash_text(std::string_view text, uint64_t h = kHashTextStart);

// The 16 lowercase hex digits of a hash, as keys and databases print it.
std::string hash_hex(uint64_t h);
// The inverse of hash_hex; false when `text` is not 1 to 16 hex digits.
bool parse_hash_hex(const std::string& text, uint64_t& out);

struct Decision {
  DecisionKey key;
  AttrValue value;
  friend bool operator==(const Decision&, const Decision&) = default;
};

// A decision point met while compiling: what was asked, among which values, and what the pass's
// heuristic would take. `marker` is the pass's pipeline position ("t:007_stage_inputs"), so sorting
// by (marker, key) gives pipeline order.
struct DecisionPoint {
  DecisionKey key;
  std::string node;  // the node asked about, for people (split kernels add nodes)
  std::string marker;
  std::vector<AttrValue> candidates;
  AttrValue heuristic;
  AttrValue chosen;
};

}  // namespace tessera
