// TuningKey: the printed form of a tuning-database key ("KERNEL/DEVICE/CC/VERSION/PIPELINE") and
// its parser, which `tessera db show` uses to read a key back.
#include <sstream>

#include "tessera/tune/tuning_db.h"

namespace tessera {

std::string TuningKey::str() const {
  return hash_hex(kernel) + "/" + device + "/" + compute_capability + "/" + version + "/" + hash_hex(pipeline);
}

bool TuningKey::parse(const std::string& text, TuningKey& out) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream is(text);
  while (std::getline(is, part, '/')) parts.push_back(part);
  // getline drops a trailing empty field ("a/b/c/d/e/"), which would otherwise read as five.
  if (parts.size() != 5 || text.back() == '/') return false;
  TuningKey key;
  if (!parse_hash_hex(parts[0], key.kernel) || !parse_hash_hex(parts[4], key.pipeline)) return false;
  key.device = parts[1];
  key.compute_capability = parts[2];
  key.version = parts[3];
  if (key.device.empty() || key.compute_capability.empty() || key.version.empty()) return false;
  out = std::move(key);
  return true;
}

}  // namespace tessera
