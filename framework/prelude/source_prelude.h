// The headers most of libtessera's and the plugins' sources include. clang builds (the sanitizer
// build) precompile them once for libtessera and once for all plugins (framework/CMakeLists.txt),
// which takes about a fifth off each plugin's compile under ASan; gcc gains nothing measurable from
// it, so the Release build does not use it (docs/build-time.md). Every source still includes what
// it uses: the gcc build, which never sees this header, checks that.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
