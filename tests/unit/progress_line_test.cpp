// The progress line of long CLI runs (framework/cli/progress_line.h): silent while quiet, a line per
// report in a log (at most one every ten seconds), redrawn in place and cleared on a terminal.
#include "framework/cli/progress_line.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace tessera::cli {
namespace {

TEST(ProgressLine, ClockText) {
  EXPECT_EQ(clock_text(0), "0:00");
  EXPECT_EQ(clock_text(42.4), "0:42");
  EXPECT_EQ(clock_text(62), "1:02");
  EXPECT_EQ(clock_text(3723), "1:02:03");
  EXPECT_EQ(clock_text(-5), "0:00");
}

TEST(ProgressLine, SilentWhileQuiet) {
  std::ostringstream out;
  ProgressLine line(out, /*terminal=*/false, "sim", /*quiet_seconds=*/3600);
  line.update("k_a", 0.5);
  line.finish();
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressLine, LogGetsWholeLinesAtMostEveryTenSeconds) {
  std::ostringstream out;
  ProgressLine line(out, /*terminal=*/false, "sim", /*quiet_seconds=*/0);
  line.update("k_a", 0.25);
  line.update("k_a", 0.5);  // within ten seconds of the first: not printed
  line.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("sim: k_a   25%  (elapsed 0:00, ETA 0:00)\n", 0), 0u) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find("50%"), std::string::npos) << text;
}

TEST(ProgressLine, TerminalRedrawsInPlaceAndClearsAtTheEnd) {
  std::ostringstream out;
  {
    ProgressLine line(out, /*terminal=*/true, "sim", /*quiet_seconds=*/0);
    line.update("k_first_kernel", 0.0);
  }  // the destructor finishes the line
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("\rsim: k_first_kernel    0%  (elapsed 0:00)", 0), 0u) << text;
  EXPECT_EQ(text.find("ETA"), std::string::npos) << "no estimate before any work is done";
  EXPECT_EQ(text.substr(text.size() - 1), "\r") << "cleared, cursor at the start";
}

}  // namespace
}  // namespace tessera::cli
