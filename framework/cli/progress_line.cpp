#include "progress_line.h"

#include <cmath>
#include <cstdio>

namespace tessera::cli {

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

ProgressLine::ProgressLine(std::ostream& out, bool terminal, std::string label, double quiet_seconds)
    : out_(out), terminal_(terminal), label_(std::move(label)), quiet_seconds_(quiet_seconds) {}

void ProgressLine::update(const std::string& what, double fraction) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  if (elapsed < quiet_seconds_) return;
  if (elapsed - last_print_ < (terminal_ ? 0.2 : 10.0)) return;
  last_print_ = elapsed;
  fraction = std::min(1.0, std::max(0.0, fraction));
  char percent[16];
  std::snprintf(percent, sizeof percent, "%3.0f%%", fraction * 100.0);
  std::string line = label_ + ": " + what + "  " + percent + "  (elapsed " + clock_text(elapsed);
  if (fraction > 0) line += ", ETA " + clock_text(elapsed / fraction * (1.0 - fraction));
  line += ")";
  if (terminal_) {
    const size_t width = line.size();
    if (line.size() < drawn_width_) line.append(drawn_width_ - line.size(), ' ');
    out_ << "\r" << line << std::flush;
    drawn_width_ = width;
  } else {
    out_ << line << "\n" << std::flush;
  }
}

void ProgressLine::finish() {
  if (terminal_ && drawn_width_ > 0) out_ << "\r" << std::string(drawn_width_, ' ') << "\r" << std::flush;
  drawn_width_ = 0;
}

}  // namespace tessera::cli
