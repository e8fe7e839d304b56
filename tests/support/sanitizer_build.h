// Whether the tests run under AddressSanitizer (scripts/sanitize.sh), and the share of a large
// differential corpus such a build runs. The sanitizer half of the test command checks the passes,
// the simulator and the CLI for memory errors and undefined behaviour: the code paths a third of
// a corpus exercises, at about 25 times the Release cost per program; the Release half runs every
// program against the reference (docs/sanitizers.md).
#pragma once

#include <cstddef>
#include <vector>

namespace tessera::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderSanitizers = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderSanitizers = true;
#else
inline constexpr bool kUnderSanitizers = false;
#endif
#else
inline constexpr bool kUnderSanitizers = false;
#endif

// Every program in Release; every third (the first, the fourth, ...) under the sanitizers.
template <class T>
std::vector<T> sanitizer_share(const std::vector<T>& all) {
  if (!kUnderSanitizers) return all;
  std::vector<T> out;
  for (size_t i = 0; i < all.size(); i += 3) out.push_back(all[i]);
  return out;
}

// How many of `n` random cases (sampled schedules, generated expressions) a test runs: all of them
// in Release, the first third (at least one) under the sanitizers.
constexpr int sanitizer_count(int n) { return kUnderSanitizers ? (n + 2) / 3 : n; }

}  // namespace tessera::test
