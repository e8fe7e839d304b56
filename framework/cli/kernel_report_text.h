// The static kernel report as `compile -v`, `run -v` and `ab` print it (docs/cli.md "The static
// kernel report"): one block of lines per distinct kernel (KernelReport placed on the device with
// KernelBound), its warnings, and the program's totals.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tessera/target/device.h"
#include "tessera/target/kernel_report.h"

namespace tessera::cli {

// Registers per thread of each kernel, by kernel name, as the compiler reported them; a kernel
// missing here is reported without the register limit.
using KernelRegisters = std::map<std::string, int>;
// Measured median microseconds of each kernel, by kernel name (`ab --bench`).
using KernelTimes = std::map<std::string, double>;

// The warnings of one kernel on `d`: more than 1 MB moved on fewer blocks than the device has SMs;
// more than twice its minimum bytes moved (when that is more than 1 MB: a tiny kernel's ratio says
// nothing).
std::vector<std::string> kernel_report_warnings(const KernelReport& r, const DeviceDesc& d);

// The report as blocks of lines (no trailing newlines): a header naming the device, one block per
// distinct kernel name (its first node; "N nodes" when several share it), and the totals. With
// `measured`, each kernel timed there gets a line with its time beside its bound.
using ReportBlock = std::vector<std::string>;
std::vector<ReportBlock> kernel_report_blocks(const std::vector<KernelReport>& reports, const DeviceDesc& d,
                                              const KernelRegisters& registers, const KernelTimes* measured = nullptr);

// The lines joined, each ending in a newline.
std::string kernel_report_text(const std::vector<KernelReport>& reports, const DeviceDesc& d,
                               const KernelRegisters& registers);

// Two reports side by side (`tessera ab`): block i of `left` beside block i of `right`, the left
// column padded to its widest line; the totals blocks (the last of each) are paired.
std::string side_by_side(const std::vector<ReportBlock>& left, const std::vector<ReportBlock>& right);

}  // namespace tessera::cli
