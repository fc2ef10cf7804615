// bonsai-serve-bench: load generator for a running `bonsai serve`. For each
// concurrency N it runs N clients at once, each sending R streamed
// completions one after another, and reports the aggregate generated
// tokens/s and the p50/p99 time to first token and inter-token latency.
//
// Tokens are the completion_tokens of the usage chunk that ends each stream
// (stream_options.include_usage), not a count of chunks: the server holds
// back a token that ends inside a UTF-8 character or may start a stop string
// and sends it with the next one, so one chunk can carry two tokens. The
// latencies are per chunk that carries text: TTFT from sending the request to
// the first one, ITL the gaps between the next ones.
//
// Exit status: 0 when every request succeeded, 1 when any failed (the table's
// "failed" column and a line on stderr say how many, and why the first one
// did), 2 for a bad command line.
//
// With --json-schema, every completion asks for that schema (response_format)
// and a last line reports the server's constrained-decoding cost per token,
// from the /metrics counters before and after the run.
//
//   bonsai serve -m MODEL --parallel 8 &
//   bonsai-serve-bench --port 8080 --streams 1,4,8 --requests 4 --max-tokens 64
#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitRequestsFailed = 1;
constexpr int kExitUsage = 2;

const char *const kUsage =
    "usage: bonsai-serve-bench [--host ADDR] [--port N] [--streams N,...] [--requests N]\n"
    "                          [--max-tokens N] [--prompt-words N] [--json-schema FILE]\n"
    "\n"
    "Load generator for a running `bonsai serve`: for each count in --streams, that many\n"
    "clients at once each send --requests streamed completions (temperature 0), one\n"
    "after another; one table row per count.\n"
    "\n"
    "options:\n"
    "  --host ADDR        the server's address (default 127.0.0.1)\n"
    "  --port N           the server's port (default 8080)\n"
    "  --streams N,...    concurrent clients, a comma list (default 1,4,8)\n"
    "  --requests N       completions each client sends (default 4)\n"
    "  --max-tokens N     max_tokens of each completion (default 64)\n"
    "  --prompt-words N   words appended to each prompt (default 32)\n"
    "  --json-schema FILE every completion must follow this JSON Schema (response_format);\n"
    "                     the constrained-decoding cost per token is reported at the end\n"
    "  -h, --help         show this help and exit\n"
    "\n"
    "tokens: the completion_tokens the server reports for each stream; TTFT and ITL:\n"
    "per streamed chunk that carries text. Exit status: 0 when every request succeeded,\n"
    "1 when any failed, 2 for a bad command line.\n";

struct Options {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::vector<int> streams = {1, 4, 8};
  int requests = 4;
  int max_tokens = 64;
  int prompt_words = 32;
  std::optional<json> schema; // --json-schema
};

// A mistake on the command line: reported with exit status 2.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

std::optional<int> to_int(const std::string &text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

int int_value(const std::string &flag, const std::string &text, int min, int max = INT_MAX) {
  const std::optional<int> value = to_int(text);
  if (!value)
    throw UsageError(flag + " takes a whole number, got '" + text + "'");
  if (*value < min || *value > max)
    throw UsageError(flag + " must be " +
                     (max == INT_MAX ? ">= " + std::to_string(min)
                                     : "in " + std::to_string(min) + ".." + std::to_string(max)) +
                     ", got " + text);
  return *value;
}

std::vector<int> int_list(const std::string &flag, const std::string &text) {
  std::vector<int> out;
  for (size_t at = 0;;) {
    const size_t comma = text.find(',', at);
    const std::optional<int> value = to_int(text.substr(at, comma - at));
    if (!value || *value < 1)
      throw UsageError(flag + " takes whole numbers >= 1, one or a comma list (e.g. 1,4,8), got '" +
                       text + "'");
    out.push_back(*value);
    if (comma == std::string::npos)
      return out;
    at = comma + 1;
  }
}

const char *const kValueFlags[] = {"--host",       "--port",         "--streams",    "--requests",
                                   "--max-tokens", "--prompt-words", "--json-schema"};

json read_schema(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw UsageError("--json-schema: cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception &e) {
    throw UsageError("--json-schema: '" + path + "' is not JSON (" + e.what() + ")");
  }
}

bool is_flag(const std::string &flag) {
  return std::find(std::begin(kValueFlags), std::end(kValueFlags), flag) != std::end(kValueFlags);
}

// Sets option `flag` (one of kValueFlags) from its value.
void set_option(Options &o, const std::string &flag, const std::string &value) {
  if (flag == "--host") {
    if (value.empty())
      throw UsageError("--host must not be empty");
    o.host = value;
  } else if (flag == "--port") {
    o.port = int_value(flag, value, 1, 65535);
  } else if (flag == "--streams") {
    o.streams = int_list(flag, value);
  } else if (flag == "--requests") {
    o.requests = int_value(flag, value, 1);
  } else if (flag == "--max-tokens") {
    o.max_tokens = int_value(flag, value, 1);
  } else if (flag == "--prompt-words") {
    o.prompt_words = int_value(flag, value, 0);
  } else if (flag == "--json-schema") {
    o.schema = read_schema(value);
  }
}

// Reads the command line (`--flag VALUE` or `--flag=VALUE`) into `o`;
// false when --help was asked for. Throws UsageError.
bool parse_options(const std::vector<std::string> &args, Options &o) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    if (flag == "-h" || flag == "--help")
      return false;
    if (flag.rfind("-", 0) != 0)
      throw UsageError("unexpected argument '" + flag + "': every value belongs to a flag");
    std::optional<std::string> value;
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (!is_flag(flag))
      throw UsageError("unknown option '" + flag + "'");
    if (!value && i + 1 == args.size())
      throw UsageError(flag + " needs a value");
    set_option(o, flag, value ? *value : args[++i]);
  }
  return true;
}

// The message of an OpenAI error body ({"error": {"message": ...}}), else
// the text itself, cut short.
std::string error_message(const std::string &text) {
  const json body = json::parse(text, nullptr, false);
  if (body.is_object() && body.contains("error") && body["error"].is_object())
    return body["error"].value("message", text);
  return text.substr(0, 200);
}

// What one streamed completion came back with, read event by event.
class StreamReader {
public:
  explicit StreamReader(Clock::time_point sent) : last_(sent) {}

  void feed(const char *data, size_t size) {
    pending_.append(data, size);
    for (size_t end; (end = pending_.find("\n\n")) != std::string::npos;) {
      const std::string event = pending_.substr(0, end);
      pending_.erase(0, end + 2);
      on_event(event);
    }
  }

  // Body text outside any event: the JSON of an error reply.
  std::string unframed() const { return unframed_ + pending_; }
  const std::string &error() const { return error_; }
  long completion_tokens() const { return completion_tokens_; }
  const std::vector<double> &gaps_ms() const { return gaps_ms_; }

private:
  void on_event(const std::string &event) {
    if (event.rfind("data: ", 0) != 0) {
      unframed_ += event;
      return;
    }
    const std::string data = event.substr(6);
    if (data == "[DONE]")
      return;
    const json chunk = json::parse(data, nullptr, false);
    if (!chunk.is_object()) {
      error_ = "a streamed chunk is not a JSON object: " + data.substr(0, 80);
    } else if (chunk.contains("error")) {
      error_ = "the server ended the stream: " + error_message(data);
    } else {
      on_chunk(chunk);
    }
  }

  void on_chunk(const json &chunk) {
    if (const auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object())
      completion_tokens_ = usage->value("completion_tokens", -1L);
    const auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array() || choices->empty())
      return;
    const json &text = (*choices)[0].value("text", json());
    if (!text.is_string() || text.get_ref<const std::string &>().empty())
      return; // the finish_reason alone: no text arrived
    const auto now = Clock::now();
    gaps_ms_.push_back(std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

  Clock::time_point last_;
  std::string pending_;
  std::string unframed_;
  std::string error_;
  long completion_tokens_ = -1; // until the usage chunk comes
  std::vector<double> gaps_ms_;
};

// Why a request failed, or "" when it did not.
std::string failure(const Options &o, const httplib::Result &result, const StreamReader &reader) {
  if (!result)
    return "no answer from http://" + o.host + ":" + std::to_string(o.port) + " (" +
           httplib::to_string(result.error()) + ")";
  if (result->status != 200)
    return "HTTP " + std::to_string(result->status) + ": " + error_message(reader.unframed());
  if (!reader.error().empty())
    return reader.error();
  if (reader.completion_tokens() < 0)
    return "the stream ended without its usage chunk";
  return "";
}

struct Sample {
  std::vector<double> ttft_ms, itl_ms;
  long tokens = 0;
  int requests = 0;
  int failures = 0;
  std::string first_failure;

  void add(const Sample &other) {
    ttft_ms.insert(ttft_ms.end(), other.ttft_ms.begin(), other.ttft_ms.end());
    itl_ms.insert(itl_ms.end(), other.itl_ms.begin(), other.itl_ms.end());
    tokens += other.tokens;
    requests += other.requests;
    failures += other.failures;
    if (first_failure.empty())
      first_failure = other.first_failure;
  }
};

std::string request_body(const Options &o, int client, int round) {
  std::string prompt = "Client " + std::to_string(client) + " round " + std::to_string(round);
  for (int w = 0; w < o.prompt_words; ++w)
    prompt += " word";
  json body = {{"prompt", prompt},
               {"max_tokens", o.max_tokens},
               {"temperature", 0},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (o.schema)
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema", {{"name", "bench"}, {"schema", *o.schema}}}};
  return body.dump();
}

// One streamed completion; adds its tokens and latencies to `out`.
void one_request(const Options &o, int client, int round, Sample &out) {
  httplib::Client http(o.host, o.port);
  http.set_connection_timeout(10, 0);
  http.set_read_timeout(600, 0);
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  request.body = request_body(o, client, round);
  request.set_header("Content-Type", "application/json");
  StreamReader reader(Clock::now());
  request.content_receiver = [&reader](const char *data, size_t size, uint64_t, uint64_t) {
    reader.feed(data, size);
    return true;
  };
  const httplib::Result result = http.send(request);
  ++out.requests;
  const std::string why = failure(o, result, reader);
  if (!why.empty()) {
    ++out.failures;
    if (out.first_failure.empty())
      out.first_failure = why;
    return;
  }
  out.tokens += reader.completion_tokens();
  const std::vector<double> &gaps = reader.gaps_ms();
  if (!gaps.empty()) {
    out.ttft_ms.push_back(gaps.front());
    out.itl_ms.insert(out.itl_ms.end(), gaps.begin() + 1, gaps.end());
  }
}

double percentile(std::vector<double> values, double p) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

// `streams` clients at once, each sending o.requests completions in turn.
Sample run_row(const Options &o, int streams, double &seconds) {
  std::vector<Sample> samples(static_cast<size_t>(streams));
  const auto start = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < streams; ++c)
    clients.emplace_back([&o, &samples, c] {
      for (int r = 0; r < o.requests; ++r)
        one_request(o, c, r, samples[static_cast<size_t>(c)]);
    });
  for (auto &t : clients)
    t.join();
  seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Sample all;
  for (const Sample &s : samples)
    all.add(s);
  return all;
}

// The server's constrained-decoding counters (/metrics); `read` false when
// they cannot be read.
struct ConstraintCounters {
  bool read = false;
  double tokens = 0, masks = 0, seconds = 0;
};

ConstraintCounters constraint_counters(const Options &o) {
  ConstraintCounters c;
  httplib::Client http(o.host, o.port);
  const httplib::Result result = http.Get("/metrics");
  if (!result || result->status != 200)
    return c;
  c.read = true;
  std::istringstream lines(result->body);
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.find(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos)
      continue;
    const std::string name = line.substr(0, space);
    const double value = std::atof(line.c_str() + space + 1);
    if (name == "bonsai_constrained_tokens_total")
      c.tokens = value;
    else if (name == "bonsai_constraint_masks_total")
      c.masks = value;
    else if (name == "bonsai_constraint_seconds_total")
      c.seconds = value;
  }
  return c;
}

int run(const Options &o) {
  const ConstraintCounters before = o.schema ? constraint_counters(o) : ConstraintCounters{};
  std::printf("| streams | requests | tokens | t/s aggregate | TTFT p50 ms | TTFT p99 ms | ITL "
              "p50 ms | ITL p99 ms | failed |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  Sample total;
  for (const int streams : o.streams) {
    double seconds = 0;
    const Sample row = run_row(o, streams, seconds);
    std::printf("| %d | %d | %ld | %.1f | %.0f | %.0f | %.1f | %.1f | %d |\n", streams,
                row.requests, row.tokens, static_cast<double>(row.tokens) / seconds,
                percentile(row.ttft_ms, 0.5), percentile(row.ttft_ms, 0.99),
                percentile(row.itl_ms, 0.5), percentile(row.itl_ms, 0.99), row.failures);
    std::fflush(stdout);
    total.add(row);
  }
  if (o.schema) {
    const ConstraintCounters after = constraint_counters(o);
    if (before.read && after.read && after.tokens > before.tokens) {
      const double tokens = after.tokens - before.tokens;
      std::printf("\nconstrained decoding: %.0f tokens, %.0f full masks (%.1f%%), %.1f us per "
                  "token (server's /metrics)\n",
                  tokens, after.masks - before.masks, 100.0 * (after.masks - before.masks) / tokens,
                  1e6 * (after.seconds - before.seconds) / tokens);
    } else {
      std::printf("\nconstrained decoding: the server's /metrics counters could not be read\n");
    }
  }
  if (total.failures == 0)
    return kExitOk;
  std::fprintf(stderr, "bonsai-serve-bench: %d of %d requests failed; the first: %s\n",
               total.failures, total.requests, total.first_failure.c_str());
  return kExitRequestsFailed;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  try {
    if (!parse_options(std::vector<std::string>(argv + 1, argv + argc), o)) {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
  } catch (const UsageError &e) {
    std::fprintf(stderr, "bonsai-serve-bench: error: %s (see 'bonsai-serve-bench --help')\n",
                 e.what());
    return kExitUsage;
  }
  return run(o);
}
