// Private to the IR core: the compile-time vocabulary for walking a statement's fields through its
// `reflect` list (used by stmt.cpp, serialize.cpp, canonicalize_names.cpp and verifier.cpp).
#pragma once

#include <type_traits>

#include "tessera/ir/stmt.h"

namespace tessera::stmt_reflection {

// A struct whose fields are listed by a static `reflect` (the statements, TileAxis, SlabDim).
template <class T>
concept Reflected = requires(T& value) {
  T::reflect(value, [](const char*, auto&, FieldRole) {});
};

template <class Field>
constexpr bool kIsBody = std::is_same_v<std::decay_t<Field>, Body>;

}  // namespace tessera::stmt_reflection
