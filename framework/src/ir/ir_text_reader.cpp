// The line splitter and line cursor of the IR text parser (see ir_text_reader.h).
#include "ir_text_reader.h"

#include <cctype>

#include <charconv>

namespace tessera::ir_text {

Expected<std::vector<TextLine>> split_lines(std::string_view text, const std::string& file,
                                            const ParseLimits& limits) {
  std::vector<TextLine> lines;
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start = end + 1;
    ++number;
    if (static_cast<size_t>(number) > limits.max_lines) {
      return make_error("text has more than " + std::to_string(limits.max_lines) + " lines")
          .at(SourceLoc{file, number, 1, 1}, std::string(line));
    }
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string_view::npos) continue;  // blank
    if (line[indent] == '\t') {
      return make_error("expected spaces for indentation, found a tab")
          .at(SourceLoc{file, number, static_cast<int>(indent) + 1, 1}, std::string(line));
    }
    lines.push_back(TextLine{line, number, indent});
  }
  return lines;
}

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

void LineCursor::skip_spaces() {
  while (pos_ < line_->text.size() && line_->text[pos_] == ' ') ++pos_;
}

bool LineCursor::at_end() {
  skip_spaces();
  return pos_ >= line_->text.size();
}

bool LineCursor::peek(std::string_view text) {
  skip_spaces();
  return line_->text.substr(pos_).starts_with(text);
}

char LineCursor::peek_char() {
  skip_spaces();
  return pos_ < line_->text.size() ? line_->text[pos_] : '\0';
}

bool LineCursor::accept(std::string_view text) {
  if (!peek(text)) return false;
  pos_ += text.size();
  return true;
}

bool LineCursor::accept_word(std::string_view word) {
  if (!peek(word)) return false;
  size_t after = pos_ + word.size();
  if (after < line_->text.size() && is_name_char(line_->text[after])) return false;
  pos_ = after;
  return true;
}

Status LineCursor::expect(std::string_view text) {
  if (accept(text)) return Status::ok();
  return expected("'" + std::string(text) + "'");
}

Status LineCursor::expect_word(std::string_view word) {
  if (accept_word(word)) return Status::ok();
  return expected("'" + std::string(word) + "'");
}

Status LineCursor::expect_end() {
  if (at_end()) return Status::ok();
  return expected("end of line");
}

Expected<std::string> LineCursor::name(std::string_view what) {
  skip_spaces();
  const std::string_view t = line_->text;
  if (pos_ >= t.size() || !is_name_start(t[pos_])) return expected(what);
  size_t end = pos_;
  while (end < t.size()) {
    if (is_name_char(t[end])) {
      ++end;
    } else if (t[end] == '.' && end + 1 < t.size() && is_name_char(t[end + 1])) {
      end += 2;  // `threadIdx.x`, `layers.0.weight`; never `0..16`
    } else {
      break;
    }
  }
  std::string out(t.substr(pos_, end - pos_));
  pos_ = end;
  return out;
}

std::string LineCursor::word() {
  skip_spaces();
  const std::string_view t = line_->text;
  size_t end = pos_;
  while (end < t.size() && (std::isalnum(static_cast<unsigned char>(t[end])) != 0 || t[end] == '_')) ++end;
  std::string out(t.substr(pos_, end - pos_));
  pos_ = end;
  return out;
}

Expected<int64_t> LineCursor::integer(std::string_view what) {
  skip_spaces();
  const std::string_view t = line_->text;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data() + pos_, t.data() + t.size(), value);
  if (ec != std::errc() || ptr == t.data() + pos_) return expected(what);
  pos_ = static_cast<size_t>(ptr - t.data());
  return value;
}

Expected<uint64_t> LineCursor::unsigned_integer(std::string_view what) {
  skip_spaces();
  const std::string_view t = line_->text;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data() + pos_, t.data() + t.size(), value);
  if (ec != std::errc() || ptr == t.data() + pos_) return expected(what);
  pos_ = static_cast<size_t>(ptr - t.data());
  return value;
}

std::string_view LineCursor::take_rest() {
  skip_spaces();
  std::string_view rest = line_->text.substr(std::min(pos_, line_->text.size()));
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  pos_ = line_->text.size();
  return rest;
}

Diagnostic LineCursor::error_at(size_t col, size_t length, std::string message) const {
  return make_error(std::move(message))
      .at(SourceLoc{*file_, line_->number, static_cast<int>(col) + 1,
                    static_cast<int>(std::max<size_t>(length, 1))},
          std::string(line_->text));
}

Diagnostic LineCursor::error(std::string message) const { return error_at(pos_, 1, std::move(message)); }

Diagnostic LineCursor::expected(std::string_view what) {
  skip_spaces();
  std::string found;
  if (pos_ >= line_->text.size()) {
    found = "end of line";
  } else {
    size_t end = pos_;
    while (end < line_->text.size() && line_->text[end] != ' ' && end - pos_ < 20) ++end;
    found = "'" + std::string(line_->text.substr(pos_, end - pos_)) + "'";
  }
  return error("expected " + std::string(what) + ", found " + found);
}

}  // namespace tessera::ir_text
