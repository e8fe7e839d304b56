// tessera_corpus_json: prints the differential corpus (tests/support/program_corpus.h) as JSON,
// `[{"name": ..., "program": ...}, ...]` in corpus order, for tests/pytorch_oracle/oracle.py. The
// corpus stays C++ (the differential tests instantiate from it); this is how a script reads it.
#include <iostream>

#include <nlohmann/json.hpp>

#include "support/program_corpus.h"

int main() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const tessera::test::CorpusProgram& p : tessera::test::differential_corpus())
    out.push_back({{"name", tessera::test::corpus_test_name(p)}, {"program", p.text}});
  std::cout << out.dump(1) << "\n";
  return 0;
}
