// SearchTree: the decision tree of one tuning task as far as trials have shown it, with the
// statistics single-player MCTS selects by.
//
// A node is a decision point (a DecisionKey) reached after the decisions above it; it has one
// branch per candidate value. A branch leads to the decision point that came next in the trials
// that took it (normally exactly one; none when the trajectory ended there). The tree only grows
// from trial results (TrialResult::decisions), so it is expanded lazily: the search learns which
// decision follows a value only by running a trial that takes it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "tessera/tune/decision.h"

namespace tessera::mcts {

struct TreeNode;

struct Branch {
  int64_t visits = 0;
  double best_reward = 0;  // the best reward of any trial through this branch (0 = none succeeded)
  bool attempted = false;  // some trial fixed or took this value
  bool exhausted = false;  // attempted, and every trajectory through it has been tried
  // The decision that came next, by key. More than one only when the trials contradict the tree's
  // assumption that the next decision depends only on the values above it.
  std::map<DecisionKey, std::unique_ptr<TreeNode>> next;
};

struct TreeNode {
  DecisionKey key;
  std::vector<AttrValue> candidates;
  std::optional<size_t> heuristic;  // index of the heuristic's value among the candidates
  std::vector<Branch> branches;  // one per candidate
  int64_t visits = 0;
  bool exhausted = false;
};

// What a trial explores: the values fixed along the selected path, down to the untried value.
struct Expansion {
  std::map<DecisionKey, AttrValue> fixed;
  TreeNode* node = nullptr;  // where the untried value is
  size_t branch = 0;
};

class SearchTree {
 public:
  struct Weights {
    double ucb_c = 1.41;
    double prior_weight = 0;
    double widening = 0.5;
  };
  explicit SearchTree(Weights weights) : weights_(weights) {}

  // An analytic estimate of the latency of a trial fixing these values (the cost model's, when the
  // measurer is the GPU): the prior that ranks the values no trial has given a decision yet.
  using Estimate = std::function<std::optional<double>(const std::map<DecisionKey, AttrValue>& fixed)>;

  // True before the first trial is recorded.
  bool empty() const { return !root_.attempted; }
  // True when every trajectory the tree knows of has been tried.
  bool exhausted() const { return root_.exhausted; }

  // Descends from the root by UCB1 on max-normalised reward plus the prior, until a node that may
  // try another value: progressive widening lets a node visited v times try ceil(v^widening)
  // values, more when all those it tried are exhausted or when the value it would try next was
  // never given to its decision anywhere. nullopt when the tree is exhausted (or empty). With
  // `estimate`, the values never given to a decision are tried in the order of their estimates.
  std::optional<Expansion> select(const Estimate* estimate = nullptr);

  // Records a trial: the nodes along its actual trajectory (created when new), the reward
  // backed up along it (0 for a failed trial), and `expansion`'s branch marked attempted even
  // when the trial did not take it, so that no selection repeats it.
  void record(const std::vector<DecisionPoint>& trajectory, double reward, const std::optional<Expansion>& expansion);
  // Marks `expansion`'s value attempted without a trial (its spec already ran).
  void skip(const Expansion& expansion);

 private:
  // The untried value to expand next: the one with the best estimate, which is the best reward it
  // had anywhere in the tree, or for a value never given to this decision, the centre's (the value
  // with the best reward at this node, else the heuristic's) less 2% per step away from it in the
  // candidate list (with `estimate`: less 2% per place in the order of their estimated latencies,
  // those without an estimate last). The lower index on a tie.
  std::optional<size_t> first_untried(const TreeNode& node, const std::map<DecisionKey, AttrValue>& fixed,
                                      const Estimate* estimate) const;
  double score(const TreeNode& node, size_t index) const;

  Weights weights_;
  Branch root_;  // the empty prefix: its `next` is the first decision point
  // The best reward of any trial that gave a decision a value, wherever in the tree: what one
  // subtree learnt about a value orders the untried values of every other.
  std::map<std::pair<DecisionKey, AttrValue>, double> value_best_;
};

}  // namespace tessera::mcts
