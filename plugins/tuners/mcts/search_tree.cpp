// SearchTree: selection (UCB1 on max-normalised reward plus a decaying prior on the heuristic's
// value, progressive widening), the order untried values are expanded in, lazy growth from trial
// trajectories, backpropagation of the best reward, and exhaustion
// (a branch is exhausted once every trajectory through it has been tried, so the search never
// selects a trajectory twice and knows when the whole tree has been seen).
// Tests: tests/unit/mcts_tuner_test.cpp.
#include "search_tree.h"

#include <algorithm>
#include <cmath>

namespace tessera::mcts {

namespace {

size_t index_of(const std::vector<AttrValue>& values, const AttrValue& v) {
  return static_cast<size_t>(std::find(values.begin(), values.end(), v) - values.begin());
}

TreeNode* first_open(const Branch& b) {
  for (const auto& [key, node] : b.next)
    if (!node->exhausted) return node.get();
  return nullptr;
}

// Recomputes the exhaustion flags below `b` (a trial may change them anywhere along its path and
// along the selected one, which differ only when trials contradict the tree).
void refresh_exhaustion(Branch& b) {
  bool open = false;
  for (auto& [key, node] : b.next) {
    bool node_exhausted = true;
    for (Branch& child : node->branches) {
      refresh_exhaustion(child);
      node_exhausted = node_exhausted && child.exhausted;
    }
    node->exhausted = node_exhausted;
    open = open || !node_exhausted;
  }
  b.exhausted = b.attempted && !open;
}

void credit(Branch& b, double reward) {
  b.attempted = true;
  ++b.visits;
  b.best_reward = std::max(b.best_reward, reward);
}

}  // namespace

std::optional<size_t> SearchTree::first_untried(const TreeNode& node, const std::map<DecisionKey, AttrValue>& fixed,
                                                const Estimate* estimate) const {
  // The centre: the value with the best reward below it, or the heuristic's before any success
  // (index 0 when the heuristic is not a candidate). Candidate lists are ordered (sizes, counts),
  // so a good value's neighbours are the likeliest to be good too.
  size_t centre = node.heuristic.value_or(0);
  double centre_reward = 0;
  for (size_t i = 0; i < node.branches.size(); ++i) {
    if (node.branches[i].best_reward > centre_reward) centre = i, centre_reward = node.branches[i].best_reward;
  }
  // Each untried value is estimated by the best reward it had anywhere in the tree; one no trial
  // gave this decision yet by the centre's, a little less the further it is from the centre.
  auto global_best = [&](size_t i) -> std::optional<double> {
    auto it = value_best_.find({node.key, node.candidates[i]});
    if (it == value_best_.end()) return std::nullopt;
    return it->second;
  };
  const double centre_estimate = global_best(centre).value_or(0);
  // With an estimator, the never-given values' places in the order of their estimated latencies
  // replace their distances from the centre.
  std::vector<size_t> place(node.branches.size(), 0);
  if (estimate != nullptr) {
    std::vector<std::pair<double, size_t>> ranked;
    size_t unestimated = 0;
    for (size_t i = 0; i < node.branches.size(); ++i) {
      if (node.branches[i].attempted || global_best(i)) continue;
      std::map<DecisionKey, AttrValue> with = fixed;
      with[node.key] = node.candidates[i];
      std::optional<double> latency = (*estimate)(with);
      if (latency) ranked.emplace_back(*latency, i);
      else place[i] = node.branches.size() + unestimated++;  // after every estimated value
    }
    std::stable_sort(ranked.begin(), ranked.end());
    for (size_t r = 0; r < ranked.size(); ++r) place[ranked[r].second] = r;
  } else {
    for (size_t i = 0; i < node.branches.size(); ++i) place[i] = i > centre ? i - centre : centre - i;
  }
  std::optional<size_t> best;
  double best_estimate = 0;
  for (size_t i = 0; i < node.branches.size(); ++i) {
    if (node.branches[i].attempted) continue;
    const double value = global_best(i).value_or(centre_estimate * (1.0 - 0.02 * static_cast<double>(place[i])));
    if (!best || value > best_estimate) best = i, best_estimate = value;
  }
  return best;
}

double SearchTree::score(const TreeNode& node, size_t index) const {
  const Branch& b = node.branches[index];
  const double q = root_.best_reward > 0 ? b.best_reward / root_.best_reward : 0.0;
  const double visits = static_cast<double>(std::max<int64_t>(b.visits, 1));
  const double explore = weights_.ucb_c * std::sqrt(std::log(static_cast<double>(std::max<int64_t>(node.visits, 1))) / visits);
  const double prior = index == node.heuristic ? weights_.prior_weight / (1.0 + static_cast<double>(b.visits)) : 0.0;
  return q + explore + prior;
}

std::optional<Expansion> SearchTree::select(const Estimate* estimate) {
  if (empty() || exhausted()) return std::nullopt;
  Expansion e;
  const Branch* at = &root_;
  for (;;) {
    TreeNode* node = first_open(*at);
    // An open branch always has an open node below it (refresh_exhaustion keeps that true).
    if (!node) return std::nullopt;
    size_t tried = 0, open = 0;
    for (const Branch& b : node->branches) tried += b.attempted, open += b.attempted && !b.exhausted;
    const double allowed = std::ceil(std::pow(static_cast<double>(std::max<int64_t>(node->visits, 1)), weights_.widening));
    std::optional<size_t> untried = first_untried(*node, e.fixed, estimate);
    // A value no trial has given this decision anywhere is tried at once: each value is measured
    // at least once (in the best trial's context) before widening rations the rest.
    const bool unseen = untried && !value_best_.count({node->key, node->candidates[*untried]});
    if (untried && (open == 0 || unseen || static_cast<double>(tried) < allowed)) {
      e.fixed[node->key] = node->candidates[*untried];
      e.node = node;
      e.branch = *untried;
      return e;
    }
    std::optional<size_t> chosen;
    double chosen_score = 0;
    for (size_t i = 0; i < node->branches.size(); ++i) {
      if (!node->branches[i].attempted || node->branches[i].exhausted) continue;
      const double s = score(*node, i);
      if (!chosen || s > chosen_score) chosen = i, chosen_score = s;
    }
    if (!chosen) return std::nullopt;
    e.fixed[node->key] = node->candidates[*chosen];
    at = &node->branches[*chosen];
  }
}

void SearchTree::record(const std::vector<DecisionPoint>& trajectory, double reward,
                        const std::optional<Expansion>& expansion) {
  credit(root_, reward);
  Branch* at = &root_;
  for (const DecisionPoint& d : trajectory) {
    std::unique_ptr<TreeNode>& slot = at->next[d.key];
    if (!slot) {
      slot = std::make_unique<TreeNode>();
      slot->key = d.key;
      slot->candidates = d.candidates;
      const size_t heuristic = index_of(d.candidates, d.heuristic);
      if (heuristic < d.candidates.size()) slot->heuristic = heuristic;
      slot->branches.resize(d.candidates.size());
    }
    TreeNode& node = *slot;
    size_t index = index_of(node.candidates, d.chosen);
    if (index == node.candidates.size()) {  // a value outside the candidates it was asked with
      node.candidates.push_back(d.chosen);
      node.branches.emplace_back();
    }
    ++node.visits;
    credit(node.branches[index], reward);
    double& value_best = value_best_[{d.key, d.chosen}];
    value_best = std::max(value_best, reward);
    at = &node.branches[index];
  }
  if (expansion && !expansion->node->branches[expansion->branch].attempted) {
    // The trial did not take the value it fixed (the decision was not asked): the value is still
    // spent, with the trial's reward, so that selection moves on.
    ++expansion->node->visits;
    credit(expansion->node->branches[expansion->branch], reward);
  }
  refresh_exhaustion(root_);
}

void SearchTree::skip(const Expansion& expansion) {
  expansion.node->branches[expansion.branch].attempted = true;
  refresh_exhaustion(root_);
}

}  // namespace tessera::mcts
