// Decision keys: their printed form and the hex spelling of hashes that keys and tuning databases use.
#include "tessera/tune/decision.h"

namespace tessera {

uint64_t hash_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_text(std::string_view text, uint64_t h) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hash_hex(uint64_t h) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[static_cast<size_t>(i)] = kDigits[h & 0xf];
  return s;
}

bool parse_hash_hex(const std::string& text, uint64_t& out) {
  if (text.empty() || text.size() > 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  out = v;
  return true;
}

std::string DecisionKey::str() const {
  std::string s = pass + "." + knob + "@" + hash_hex(kernel);
  if (ordinal != 0) s += "#" + std::to_string(ordinal);
  return s;
}

}  // namespace tessera
