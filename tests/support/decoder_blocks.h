// A torch_expr program of N pre-norm decoder-style blocks, the shape of a transformer layer
// without attention: RMSNorm, a Linear and a residual add, RMSNorm, a SwiGLU MLP and a residual
// add. Compile-scaling measurements (bench/compile_scaling.cpp) and tests that compile such
// models (tests/e2e/decoder_blocks_test.cpp) build it here, so both speak of the same program.
#pragma once

#include <string>

namespace tessera::test {

struct DecoderBlocksShape {
  int hidden = 256;
  int intermediate = 512;  // the MLP's inner width
  int seq = 32;
};

inline std::string decoder_blocks_program(int blocks, DecoderBlocksShape s = {}) {
  const std::string h = std::to_string(s.hidden), m = std::to_string(s.intermediate);
  std::string text = "import torch.nn as nn\nimport torch.nn.functional as F\n";
  text += "x = torch.randn(" + std::to_string(s.seq) + ", " + h + ")\n";
  for (int b = 0; b < blocks; ++b) {
    text += "h = nn.RMSNorm(" + h + ")(x)\n";
    text += "x = x + nn.Linear(" + h + ", " + h + ")(h)\n";
    text += "h = nn.RMSNorm(" + h + ")(x)\n";
    text += "x = x + nn.Linear(" + m + ", " + h + ")(F.silu(nn.Linear(" + h + ", " + m + ")(h)) * nn.Linear(" + h +
            ", " + m + ")(h))\n";
  }
  return text + "x\n";
}

}  // namespace tessera::test
