// bonsai-gguf tokenize / detokenize: run a GGUF file's tokenizer from the shell.
#include <boost/program_options.hpp>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "command.hpp"

namespace po = boost::program_options;

namespace bonsai::tools {

namespace {

std::string read_text_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open the text file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    throw Error(path + ": error while reading the text file");
  return buffer.str();
}

// Length of the UTF-8 character at s[i], or 0 if the bytes there do not form
// one; only used to decide what is printable as is.
size_t utf8_char_length(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const size_t n = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (n == 0 || i + n > s.size() || lead >= 0xF5)
    return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
      return 0;
  return n;
}

// Quotes a token's bytes so that spaces, control characters and partial UTF-8
// sequences are visible: "\n", "\t", "\xE4" ...
std::string visible(std::string_view bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else if (const size_t n = c >= 0x80 ? utf8_char_length(bytes, i) : 0; n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
    ++i;
  }
  return out + "\"";
}

std::vector<int32_t> parse_ids(const std::string &list) {
  std::vector<int32_t> ids;
  std::stringstream stream(list);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    const std::string trimmed =
        first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    int32_t id = 0;
    const auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), id);
    if (trimmed.empty() || ec != std::errc() || end != trimmed.data() + trimmed.size())
      throw Error("IDS: '" + trimmed + "' is not a token id (expected e.g. 9707,1879)");
    ids.push_back(id);
  }
  if (ids.empty())
    throw Error("IDS: no token ids given (expected e.g. 9707,1879)");
  return ids;
}

int run_tokenize(const std::vector<std::string> &args) {
  po::options_description visible_options(
      "usage: bonsai-gguf tokenize FILE (--text T | --text-file F) [--pieces] [--no-special]");
  visible_options.add_options()("help,h", "show this help")("text", po::value<std::string>(),
                                                            "text to tokenize")(
      "text-file", po::value<std::string>(), "read the text from this file (bytes as is)")(
      "pieces", "print one 'id<TAB>\"piece\"' line per token")(
      "no-special", "treat control tokens such as <|im_start|> as plain text");
  po::options_description all = visible_options;
  all.add_options()("file", po::value<std::string>(), "GGUF file");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << visible_options << '\n';
    return 0;
  }
  if (!vm.count("file"))
    throw Error("missing the GGUF FILE argument");
  if (vm.count("text") == vm.count("text-file"))
    throw Error("give exactly one of --text or --text-file");
  const std::string text = vm.count("text") ? vm["text"].as<std::string>()
                                            : read_text_file(vm["text-file"].as<std::string>());

  const auto file = gguf::File::open(vm["file"].as<std::string>());
  const Tokenizer tokenizer = Tokenizer::from_gguf(file);
  const std::vector<int32_t> ids = tokenizer.encode(text, !vm.count("no-special"));
  if (vm.count("pieces")) {
    for (int32_t id : ids)
      std::cout << id << '\t' << visible(tokenizer.token_bytes(id)) << '\n';
  } else {
    for (size_t i = 0; i < ids.size(); ++i)
      std::cout << (i ? "," : "") << ids[i];
    std::cout << '\n';
  }
  return 0;
}

int run_detokenize(const std::vector<std::string> &args) {
  po::options_description visible_options("usage: bonsai-gguf detokenize FILE IDS");
  visible_options.add_options()("help,h", "show this help");
  po::options_description all = visible_options;
  all.add_options()("file", po::value<std::string>(), "GGUF file")("ids", po::value<std::string>(),
                                                                   "comma-separated token ids");
  po::positional_options_description positional;
  positional.add("file", 1).add("ids", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << visible_options << '\n';
    return 0;
  }
  if (!vm.count("file") || !vm.count("ids"))
    throw Error("expected FILE and IDS (e.g. bonsai-gguf detokenize model.gguf 9707,1879)");
  const std::vector<int32_t> ids = parse_ids(vm["ids"].as<std::string>());
  const auto file = gguf::File::open(vm["file"].as<std::string>());
  const Tokenizer tokenizer = Tokenizer::from_gguf(file);
  std::cout << tokenizer.decode(ids) << '\n';
  return 0;
}

const bool registered_tokenize =
    register_command({"tokenize", "print the token ids (or pieces) of a text", &run_tokenize});
const bool registered_detokenize = register_command(
    {"detokenize", "print the text of comma-separated token ids", &run_detokenize});

} // namespace

} // namespace bonsai::tools
