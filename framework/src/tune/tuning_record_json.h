// The JSON form of tuning records, shared by the database (whose rows hold each record's decisions
// as JSON text) and its export/import format (TuningDb::to_json / from_json). Internal to
// libtessera.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/support/status.h"
#include "tessera/tune/tuning_db.h"

namespace tessera {

// Ordered, so written objects keep their fields in the order a reader expects.
using TuningJson = nlohmann::ordered_json;

// Parses JSON text (a file being imported, a database row's decisions). Nesting deeper than the
// format's is refused before a tree is built; syntax errors are located in `source`.
Expected<TuningJson> parse_tuning_json(const std::string& text, const std::string& source);

// Checks that a record can be stored and read back unchanged: its key prints and parses back
// (non-empty fields without '/', whitespace or control characters), the latencies are finite
// (the best one positive), the decisions are named. Errors name `source` and `where` ("record
// KEY", "records[3]").
Status check_tuning_record(const TuningRecord& r, const std::string& source, const std::string& where);

// [{"pass", "knob", "ordinal", "kernel": hash_hex, "value": knob_value_str}, ...]
TuningJson decisions_to_json(const std::vector<Decision>& decisions);
// The inverse; `where` names the array ("records[3].decisions") in errors.
Expected<std::vector<Decision>> decisions_from_json(const TuningJson& j, const std::string& source,
                                                   const std::string& where);

// One record of the export format (its key's fields, then the record's).
TuningJson record_to_json(const TuningRecord& r);
// The inverse, checked with check_tuning_record; unknown and missing fields are errors.
Expected<TuningRecord> record_from_json(const TuningJson& j, const std::string& source, const std::string& where);

}  // namespace tessera
