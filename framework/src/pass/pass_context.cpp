// PassContext: answers a pass's knob decisions (pinned value, tuner, replay, heuristic, in that
// order), records each answer on the node it shaped, and collects skipped matches.
#include "tessera/pass/pass_context.h"

#include <algorithm>

#include "tessera/pass/kernel_identity.h"
#include "tessera/tune/choice_source.h"

namespace tessera {

namespace {

std::string join_values(const std::vector<AttrValue>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ", ";
    s += knob_value_str(values[i]);
  }
  return s;
}

// A Float knob accepts integers in YAML (`ratio: 1`); compare and record them as floats.
AttrValue as_knob_type(const AttrValue& v, KnobType type) {
  if (type == KnobType::Float && std::holds_alternative<int64_t>(v))
    return AttrValue(static_cast<double>(std::get<int64_t>(v)));
  return v;
}

bool is_acceptable(const AttrValue& v, const KnobSpec& spec, const std::vector<AttrValue>& candidates) {
  if (!knob_value_has_type(v, spec.type)) return false;
  if (candidates.empty()) return true;
  AttrValue typed = as_knob_type(v, spec.type);
  return std::find(candidates.begin(), candidates.end(), typed) != candidates.end();
}

// Keeps one record per (pass, knob) on a node: choosing again replaces the earlier answer.
void record_choice(Node& node, KnobChoice choice) {
  for (KnobChoice& existing : node.choices) {
    if (existing.pass == choice.pass && existing.knob == choice.knob) {
      existing = std::move(choice);
      return;
    }
  }
  node.choices.push_back(std::move(choice));
}

}  // namespace

PassContext::PassContext(std::string pass_name, std::string marker, std::vector<KnobSpec> knobs,
                         std::vector<KnobPin> pins, Sources sources, const DeviceDesc* device,
                         DiagnosticEngine* diags)
    : pass_name_(std::move(pass_name)),
      marker_(std::move(marker)),
      knobs_(std::move(knobs)),
      pins_(std::move(pins)),
      sources_(sources),
      device_(device),
      diags_(diags) {}

Expected<AttrValue> PassContext::choose(std::string_view knob, Node& node,
                                        const std::vector<AttrValue>& candidates,
                                        const AttrValue& heuristic) {
  auto spec_it = std::find_if(knobs_.begin(), knobs_.end(), [&](const KnobSpec& k) { return k.name == knob; });
  if (spec_it == knobs_.end()) {
    return error_at(node, "internal error: pass '" + pass_name_ + "' asked for knob '" + std::string(knob) +
                              "', which it does not declare in knobs()");
  }
  const KnobSpec& spec = *spec_it;
  // Candidates computed for this node win; the schema's static list is the fallback.
  std::vector<AttrValue> allowed;
  allowed.reserve(candidates.empty() ? spec.candidates.size() : candidates.size());
  for (const AttrValue& c : candidates.empty() ? spec.candidates : candidates)
    allowed.push_back(as_knob_type(c, spec.type));

  auto decide = [&](AttrValue value, std::string source) -> AttrValue {
    record_choice(node, KnobChoice{pass_name_, std::string(knob), value, std::move(source)});
    return value;
  };

  // The last pin for a knob wins, matching how a YAML map would read if duplicates slipped through.
  auto pin_it = std::find_if(pins_.rbegin(), pins_.rend(), [&](const KnobPin& p) { return p.knob == knob; });
  if (pin_it != pins_.rend()) {
    const KnobPin& pin = *pin_it;
    if (!is_acceptable(pin.value, spec, allowed)) {
      std::string where = pin.loc.valid() ? " (at " + pin.loc.str() + ")" : std::string();
      std::string message = "knob '" + std::string(knob) + "' of pass '" + pass_name_ + "' is pinned to " +
                            knob_value_str(pin.value) + where;
      if (!knob_value_has_type(pin.value, spec.type)) {
        message += ", but it expects " + std::string(knob_type_name(spec.type));
      } else {
        message += ", which is not among the candidates at node '" + node.id() + "': " + join_values(allowed);
      }
      return error_at(node, std::move(message));
    }
    return decide(as_knob_type(pin.value, spec.type), "pinned");
  }

  if (sources_.tuner == nullptr && sources_.replay == nullptr)
    return decide(as_knob_type(heuristic, spec.type), "heuristic");

  // The key: hashing the kernel is the costly part, so only when a source will read it.
  auto hash_it = kernel_hashes_.find(node.id());
  if (hash_it == kernel_hashes_.end()) {
    std::optional<uint64_t> h = graph_ ? kernel_structural_hash(*graph_, node) : std::nullopt;
    hash_it = kernel_hashes_.emplace(node.id(), h.value_or(0)).first;
  }
  const DecisionKey key{hash_it->second, pass_name_, std::string(knob), asks_[{node.id(), std::string(knob)}]++};
  for (ChoiceSource* source : {sources_.tuner, sources_.replay}) {
    if (!source) continue;
    ChoiceRequest request{key, marker_, node, allowed, heuristic};
    std::optional<AttrValue> answer = source->choose(request);
    // A source that answers outside the candidates (e.g. a stale replay) is ignored.
    if (answer && is_acceptable(*answer, spec, allowed))
      return decide(as_knob_type(*answer, spec.type), std::string(source->name()));
  }
  return decide(as_knob_type(heuristic, spec.type), "heuristic");
}

Expected<int64_t> PassContext::choose_int(std::string_view knob, Node& node, const std::vector<int64_t>& candidates,
                                          int64_t heuristic) {
  std::vector<AttrValue> values(candidates.begin(), candidates.end());
  Expected<AttrValue> v = choose(knob, node, values, AttrValue(heuristic));
  if (!v) return std::move(v).error();
  if (!std::holds_alternative<int64_t>(*v))
    return error_at(node, "internal error: knob '" + std::string(knob) + "' of pass '" + pass_name_ +
                              "' was chosen as " + knob_value_str(*v) + ", but the pass reads it as an int");
  return std::get<int64_t>(*v);
}

Expected<bool> PassContext::choose_bool(std::string_view knob, Node& node, bool heuristic) {
  Expected<AttrValue> v = choose(knob, node, {AttrValue(false), AttrValue(true)}, AttrValue(heuristic));
  if (!v) return std::move(v).error();
  if (!std::holds_alternative<bool>(*v))
    return error_at(node, "internal error: knob '" + std::string(knob) + "' of pass '" + pass_name_ +
                              "' was chosen as " + knob_value_str(*v) + ", but the pass reads it as a bool");
  return std::get<bool>(*v);
}

PassContext PassContext::fork() const {
  PassContext application = *this;
  application.skips_.clear();
  application.kernel_hashes_.clear();
  application.asks_.clear();
  application.own_diags_ = std::make_shared<DiagnosticEngine>();
  application.diags_ = application.own_diags_.get();
  return application;
}

void PassContext::join(const PassContext& application) {
  skips_.insert(skips_.end(), application.skips_.begin(), application.skips_.end());
  if (application.own_diags_ && diags_ != application.diags_)
    for (const Diagnostic& d : application.own_diags_->diagnostics()) diags_->report(d);
}

void PassContext::skip(const Node& node, std::string reason) { skips_.push_back(Skip{node.id(), std::move(reason)}); }

Diagnostic PassContext::error_at(const Node& node, std::string message) const {
  Diagnostic d = make_error(std::move(message));
  d.at_node(node.id());
  d.in_pass(marker_.empty() ? pass_name_ : marker_);
  return d;
}

}  // namespace tessera
