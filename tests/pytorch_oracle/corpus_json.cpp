// tessera_corpus_json: prints the differential corpus (tests/support/program_corpus.h) as JSON,
// `[{"name": ..., "program": ...}, ...]` in corpus order, for tests/pytorch_oracle/oracle.py. The
// corpus stays C++ (the differential tests instantiate from it); this is how a script reads it.
// `--files DIR` writes each program to DIR/<name>.py instead, one file per program, for the GPU
// bundle (scripts/bundle.sh), whose gpu-run.sh runs them as `tessera run -c "$(cat FILE)"`.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/program_corpus.h"

int main(int argc, char** argv) {
  const auto& corpus = tessera::test::differential_corpus();
  if (argc == 3 && std::string(argv[1]) == "--files") {
    const std::filesystem::path dir = argv[2];
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    for (const tessera::test::CorpusProgram& p : corpus) {
      std::ofstream f(dir / (tessera::test::corpus_test_name(p) + ".py"));
      f << p.text << "\n";
      if (!f.flush()) {
        std::cerr << "tessera_corpus_json: cannot write " << (dir / (tessera::test::corpus_test_name(p) + ".py")).string() << "\n";
        return 1;
      }
    }
    return 0;
  }
  if (argc != 1) {
    std::cerr << "usage: tessera_corpus_json [--files DIR]\n";
    return 2;
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const tessera::test::CorpusProgram& p : corpus)
    out.push_back({{"name", tessera::test::corpus_test_name(p)}, {"program", p.text}});
  std::cout << out.dump(1) << "\n";
  return 0;
}
