// The golden tests' FileCheck (tests/support/file_check.h): each directive matches where it
// should and fails with a message naming the check line and the text line it looked at.
#include <gtest/gtest.h>

#include "support/file_check.h"

namespace tessera::test {
namespace {

const std::string kText =
    "kernel k_sum  inputs: x  outputs: sum: (4,) float32\n"
    "  Tile(axes=(a0:4=BLOCK)):\n"
    "    acc0 = init(0.0)\n"
    "    for a1 in 0..8:  # reduce\n"
    "      in0 = load x[a0, a1]\n"
    "    sum[a0] = acc0\n";

TEST(FileCheck, MatchingChecksPass) {
  EXPECT_EQ(file_check("CHECK: kernel k_sum\n"
                       "CHECK-SAME: outputs: sum\n"
                       "CHECK-NEXT: Tile(\n"
                       "CHECK-NOT: Stage(\n"
                       "CHECK: for a1\n"
                       "CHECK-SAME: # reduce\n"
                       "CHECK-NEXT: load x\n"
                       "\n"
                       "CHECK: sum[a0]\n"
                       "CHECK-NOT: Combine\n",
                       kText, "c.txt"),
            "");
}

TEST(FileCheck, CheckSearchesForwardOnly) {
  std::string msg = file_check("CHECK: for a1\nCHECK: acc0 = init\n", kText, "c.txt");
  EXPECT_NE(msg.find("c.txt:2: error: CHECK: expected string not found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pattern: \"acc0 = init\""), std::string::npos) << msg;
}

TEST(FileCheck, NextMustBeTheFollowingLine) {
  std::string msg = file_check("CHECK: Tile(\nCHECK-NEXT: for a1\n", kText, "c.txt");
  EXPECT_NE(msg.find("c.txt:2: error: CHECK-NEXT: expected string not found on the next line"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("text line 3: \"    acc0 = init(0.0)\""), std::string::npos) << msg;
}

TEST(FileCheck, SameMustFollowOnTheMatchedLine) {
  std::string msg = file_check("CHECK: for a1\nCHECK-SAME: 0..8\nCHECK-SAME: for\n", kText, "c.txt");
  EXPECT_NE(msg.find("c.txt:3: error: CHECK-SAME: expected string not found on the same line"),
            std::string::npos)
      << msg;
}

TEST(FileCheck, NotFailsBetweenItsNeighbours) {
  std::string msg = file_check("CHECK: Tile(\nCHECK-NOT: init\nCHECK: load x\n", kText, "c.txt");
  EXPECT_NE(msg.find("c.txt:2: error: CHECK-NOT: excluded string found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("text line 3"), std::string::npos) << msg;
  // Outside the range it guards, the string may occur.
  EXPECT_EQ(file_check("CHECK: load x\nCHECK-NOT: init\n", kText, "c.txt"), "");
  EXPECT_NE(file_check("CHECK-NOT: sum[a0]\n", kText, "c.txt"), "");
}

TEST(FileCheck, MalformedChecksAreErrors) {
  EXPECT_NE(file_check("CHEK: kernel\n", kText, "c.txt").find("c.txt:1: error: expected CHECK:"),
            std::string::npos);
  EXPECT_NE(file_check("CHECK:\n", kText, "c.txt").find("empty pattern"), std::string::npos);
  EXPECT_NE(file_check("CHECK-NEXT: kernel\n", kText, "c.txt").find("needs a CHECK before it"),
            std::string::npos);
  EXPECT_NE(file_check("\n", kText, "c.txt").find("no CHECK lines"), std::string::npos);
}

}  // namespace
}  // namespace tessera::test
