// The plugin ABI. A Tessera plugin is a shared library exporting exactly one C symbol,
// `tessera_plugin_entry`, that returns a PluginDescriptor. Write it with TESSERA_PLUGIN:
//
//   #include "tessera/plugin/plugin.h"
//   static void register_plugin(tessera::Registry& r) {
//     r.add_pass("canonicalize", [] { return std::make_unique<CanonicalizePass>(); });
//   }
//   TESSERA_PLUGIN("canonicalize", "1.0.0", register_plugin)
//
// The host refuses a plugin whose api_version differs from its own kPluginApiVersion (the C++
// types a plugin compiles against must match the host's exactly). Bump kPluginApiVersion on any
// change to a public header that alters layout or virtual tables.
#pragma once

#include <cstdint>

namespace tessera {

class Registry;

constexpr uint32_t kPluginApiVersion = 21;

struct PluginDescriptor {
  uint32_t api_version;
  const char* name;
  const char* version;
  void (*register_fn)(Registry&);
};

}  // namespace tessera

#define TESSERA_PLUGIN_ENTRY_SYMBOL "tessera_plugin_entry"

#define TESSERA_PLUGIN_WITH_API(NAME, VERSION, REGISTER_FN, API)                        \
  extern "C" __attribute__((visibility("default"))) const ::tessera::PluginDescriptor*  \
  tessera_plugin_entry() {                                                              \
    static const ::tessera::PluginDescriptor descriptor{(API), (NAME), (VERSION),       \
                                                        (REGISTER_FN)};                 \
    return &descriptor;                                                                 \
  }

#define TESSERA_PLUGIN(NAME, VERSION, REGISTER_FN) \
  TESSERA_PLUGIN_WITH_API(NAME, VERSION, REGISTER_FN, ::tessera::kPluginApiVersion)
