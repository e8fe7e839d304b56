// The headers most test sources include, compiled once per build as the test binary's precompiled
// header (tests/CMakeLists.txt; docs/build-time.md): GoogleTest, the standard containers and the IR,
// plugin, pass and target interfaces. Every test source still includes what it uses; this only
// saves parsing them a hundred times.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pipeline.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"
