// bonsai-serve-bench: load generator for a running `bonsai serve`. For each
// concurrency N it runs N clients at once, each sending R streamed
// completions one after another, and reports the aggregate generated
// tokens/s and the p50/p99 time to first token and inter-token latency
// (each streamed chunk is one token: the server sends one per token).
//
//   bonsai serve -m MODEL --parallel 8 &
//   bonsai-serve-bench --port 8080 --streams 1,4,8 --requests 4 --max-tokens 64
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::vector<int> streams = {1, 4, 8};
  int requests = 4;
  int max_tokens = 64;
  int prompt_words = 32;
};

struct Sample {
  std::vector<double> ttft_ms, itl_ms;
  long tokens = 0;
  int failures = 0;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<size_t>(p * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

// One streamed completion; appends its latencies to `out`.
void one_request(const Options &o, int client, int round, Sample &out) {
  httplib::Client http(o.host, o.port);
  http.set_read_timeout(600, 0);
  std::string prompt = "Client " + std::to_string(client) + " round " + std::to_string(round);
  for (int w = 0; w < o.prompt_words; ++w)
    prompt += " word";
  const nlohmann::json body = {
      {"prompt", prompt}, {"max_tokens", o.max_tokens}, {"temperature", 0}, {"stream", true}};
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/completions";
  request.body = body.dump();
  request.set_header("Content-Type", "application/json");
  auto last = Clock::now();
  bool first = true;
  long got = 0;
  std::string pending;
  request.content_receiver = [&](const char *data, size_t size, uint64_t, uint64_t) {
    pending.append(data, size);
    size_t end;
    while ((end = pending.find("\n\n")) != std::string::npos) {
      const bool token = pending.rfind("data: {", 0) == 0;
      pending.erase(0, end + 2);
      if (!token)
        continue;
      const auto now = Clock::now();
      (first ? out.ttft_ms : out.itl_ms)
          .push_back(std::chrono::duration<double, std::milli>(now - last).count());
      first = false;
      last = now;
      ++got;
    }
    return true;
  };
  auto result = http.send(request);
  out.tokens += got;
  if (!result || result->status != 200 || got == 0)
    ++out.failures;
}

std::vector<int> int_list(const char *text) {
  std::vector<int> out;
  std::string s(text);
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    out.push_back(std::atoi(s.substr(at, comma - at).c_str()));
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--host")
      o.host = argv[i + 1];
    else if (flag == "--port")
      o.port = std::atoi(argv[i + 1]);
    else if (flag == "--streams")
      o.streams = int_list(argv[i + 1]);
    else if (flag == "--requests")
      o.requests = std::atoi(argv[i + 1]);
    else if (flag == "--max-tokens")
      o.max_tokens = std::atoi(argv[i + 1]);
    else if (flag == "--prompt-words")
      o.prompt_words = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bonsai-serve-bench [--host H] [--port P] [--streams 1,4,8] "
                           "[--requests R] [--max-tokens N] [--prompt-words W]\n");
      return 2;
    }
  }
  if (o.requests < 1 || o.max_tokens < 1 || o.prompt_words < 0 ||
      std::any_of(o.streams.begin(), o.streams.end(), [](int n) { return n < 1; })) {
    std::fprintf(stderr, "bonsai-serve-bench: counts must be >= 1\n");
    return 2;
  }
  std::printf("| streams | requests | tokens | t/s aggregate | TTFT p50 ms | TTFT p99 ms | ITL "
              "p50 ms | ITL p99 ms | failed |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const int streams : o.streams) {
    std::vector<Sample> samples(static_cast<size_t>(streams));
    const auto start = Clock::now();
    std::vector<std::thread> clients;
    for (int c = 0; c < streams; ++c)
      clients.emplace_back([&, c] {
        for (int r = 0; r < o.requests; ++r)
          one_request(o, c, r, samples[static_cast<size_t>(c)]);
      });
    for (auto &t : clients)
      t.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    Sample all;
    for (const Sample &s : samples) {
      all.ttft_ms.insert(all.ttft_ms.end(), s.ttft_ms.begin(), s.ttft_ms.end());
      all.itl_ms.insert(all.itl_ms.end(), s.itl_ms.begin(), s.itl_ms.end());
      all.tokens += s.tokens;
      all.failures += s.failures;
    }
    std::printf("| %d | %d | %ld | %.1f | %.0f | %.0f | %.1f | %.1f | %d |\n", streams,
                streams * o.requests, all.tokens, static_cast<double>(all.tokens) / seconds,
                percentile(all.ttft_ms, 0.5), percentile(all.ttft_ms, 0.99),
                percentile(all.itl_ms, 0.5), percentile(all.itl_ms, 0.99), all.failures);
    std::fflush(stdout);
  }
  return 0;
}
