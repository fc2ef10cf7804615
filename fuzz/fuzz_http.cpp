// Fuzz target: the HTTP/1.1 request framing of `bonsai serve` (RequestReader),
// driven the way HttpConnection drives it: bytes arrive in pieces into an
// input buffer as large as the connection's, one reader per request, the
// pipelined rest left for the next reader, the connection over at the first
// refusal. Limits are small so that inputs reach them.
//
// Input: byte 0 = the run's options (bits 0-1: completed requests kept alive,
// holding their bodies' budget; bit 2: finish() at the end of the input;
// bits 3-5: budget held elsewhere, in 256-byte steps; bits 6-7: the largest
// piece, 1, 3, 16 or 200 bytes), byte 1 = the seed of the piece sizes, the
// rest = the bytes the client sends.
//
// Every request is complete, refused (a known status, a JSON body) or left
// pending at the end. Completed requests and the heads the screen sees keep
// every limit and framing rule; the budget is never overdrawn and is all
// given back. The same bytes sent in the largest pieces the buffer takes
// give the same outcomes as the small pieces.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/core/flat_buffer.hpp>
#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "http/connection_limits.hpp"
#include "http/request_reader.hpp"

using bonsai::fuzz::require;
using namespace bonsai::server;

namespace {

constexpr size_t kHeaderBytes = 1024;
constexpr int32_t kHeaderCount = 8;
constexpr size_t kBodyBytes = 512;
constexpr size_t kBudgetBytes = 2048;
// HttpConnection's input buffer: a whole head plus one read; a reader that
// needs more than that unconsumed stalls the connection until its 408.
constexpr size_t kReadChunk = 256;
constexpr size_t kBufferBytes = kHeaderBytes + kReadChunk;
constexpr int kScreenStatus = 403;
constexpr int kStalled = 408;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trimmed(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

size_t field_count(const HttpMessage &message) {
  return static_cast<size_t>(std::distance(message.begin(), message.end()));
}

// What the reader lets through to the screen and to the routes: its own
// framing rules, checked here independently of how it checks them.
void require_accepted_head(const HttpMessage &message, std::string_view path) {
  require(!path.empty() && path.front() == '/', "an accepted path starts with '/'");
  require(path.find('?') == std::string_view::npos, "an accepted path has no query");
  require(std::string_view(message.target()).find(path) != std::string_view::npos,
          "the path comes from the target");
  const size_t codings = message.count(http::field::transfer_encoding);
  require(codings <= 1, "at most one Transfer-Encoding");
  if (codings == 1) {
    require(iequals(trimmed(message[http::field::transfer_encoding]), "chunked"),
            "the only transfer coding is chunked");
    require(message.count(http::field::content_length) == 0,
            "no Content-Length beside Transfer-Encoding");
  }
  // Every field line counts: two lines of a field are one comma list.
  for (const auto &field : message) {
    if (field.name() == http::field::content_encoding)
      require(iequals(trimmed(field.value()), "identity"), "no compressed body is accepted");
    if (field.name() == http::field::expect)
      require(iequals(trimmed(field.value()), "100-continue"), "only Expect: 100-continue");
  }
}

// One request's fate, compared between the two ways of sending the bytes.
struct Outcome {
  enum Kind { complete, refused, pending } kind = pending;
  int status = 0;
  bool screened = false, chunked = false;
  std::string method, target, path, body;
  unsigned version = 0;
  std::vector<std::pair<std::string, std::string>> fields;
};

// Where Beast 1.74 itself settles a malformed request differently by how it
// arrives; only the last outcome (a refused or pending one) can be such.
bool unsettled(const Outcome &x, bool screened, std::initializer_list<int> statuses) {
  if (x.screened != screened)
    return false;
  return x.kind == Outcome::pending ||
         (x.kind == Outcome::refused &&
          std::find(statuses.begin(), statuses.end(), x.status) != statuses.end());
}

bool same(const Outcome &a, const Outcome &b) {
  // A head is parsed as far as it goes in the first piece; once Beast has
  // asked for more it waits for the end of the head (or 1024 bytes of it).
  // So a malformed head is 400 at once when it comes whole, and 431, or
  // pending at the end of the input, when it trickles in.
  if (unsettled(a, false, {400, 431}) && unsettled(b, false, {400, 431}))
    return true;
  // A chunk line whose extension opens a quote scans on past the line end
  // and, each time it needs more, takes the chunk's size off the body limit
  // again: 400 whole, 413 (or 408, the buffer full) when it trickles in.
  if (a.chunked && b.chunked && unsettled(a, true, {400, 408, 413}) &&
      unsettled(b, true, {400, 408, 413}))
    return true;
  return a.kind == b.kind && a.status == b.status && a.screened == b.screened &&
         a.method == b.method && a.target == b.target && a.path == b.path && a.body == b.body &&
         a.version == b.version && a.fields == b.fields;
}

std::string describe(const std::vector<Outcome> &outcomes) {
  std::string text;
  for (const Outcome &o : outcomes) {
    static const char *const kinds[] = {"complete", "refused", "pending"};
    text += std::string(kinds[o.kind]) + " " + std::to_string(o.status) +
            (o.screened ? " screened " : " ") + o.method + " " + o.target + " body " +
            std::to_string(o.body.size()) + " B, " + std::to_string(o.fields.size()) + " fields\n";
  }
  return text;
}

struct Options {
  size_t kept_alive = 0; // completed requests held at once
  bool finish = false;   // finish() once the input is used
  size_t held_elsewhere = 0;
  size_t largest_piece = 0; // 0: as much as the buffer takes
  uint32_t seed = 0;
};

// Reads `stream` like one connection and returns what became of each request.
std::vector<Outcome> serve(std::string_view stream, const Options &options) {
  const HttpLimits limits{kBodyBytes, kHeaderBytes, kHeaderCount};
  const auto budget = std::make_shared<BodyBudget>(kBudgetBytes);
  auto elsewhere = budget->open_share();
  require(elsewhere->grow_to(options.held_elsewhere), "the budget held elsewhere fits");
  const auto require_budget = [&] {
    require(budget->in_use() <= budget->capacity(), "the budget is never overdrawn");
  };

  std::vector<Outcome> outcomes;
  std::deque<HttpRequest> kept; // bodies the server still holds
  boost::beast::flat_buffer input(kBufferBytes);
  size_t sent = 0;
  uint32_t rng = options.seed;
  const auto next_piece = [&]() -> size_t {
    if (options.largest_piece == 0)
      return stream.size();
    rng = rng * 1664525u + 1013904223u;
    return 1 + (rng >> 16) % options.largest_piece;
  };

  for (;;) {
    // Between readers, only the kept requests hold budget, each its body.
    size_t held = options.held_elsewhere;
    for (const HttpRequest &request : kept)
      held += request.message.body().size();
    require(budget->in_use() == held, "the budget holds exactly the kept bodies");

    int screenings = 0;
    bool chunked = false;
    bool refused = false;
    const Screen screen = [&](const RequestHead &head) {
      require(screenings++ == 0, "a head is screened once");
      require(!refused, "no screening after a refusal");
      require(head.message.body().empty(), "the head is screened before any body byte");
      require(head.remote_address == "fuzz", "the screen sees the client's address");
      require(field_count(head.message) <= kHeaderCount, "the screen sees at most 8 fields");
      require_accepted_head(head.message, head.path);
      chunked = head.message.chunked();
      Screening screening;
      screening.response_headers.emplace_back("Access-Control-Allow-Origin", "*");
      if (head.path.rfind("/deny", 0) == 0)
        screening.refusal = HttpResponse(kScreenStatus, R"({"error":"denied"})");
      return screening;
    };
    RequestReader reader(limits, *budget, screen, "fuzz");
    const std::string_view request_bytes = stream.substr(sent - input.size());
    using Progress = RequestReader::Progress;
    Progress progress = Progress::need_more;
    bool continued = false;
    for (;;) {
      if (input.size() > 0) {
        progress = reader.feed(input);
        require_budget();
        if (progress != Progress::need_more)
          break;
        if (reader.wants_continue()) {
          require(!continued, "100 Continue is asked for once");
          require(screenings == 1, "100 Continue only after the head is screened");
          continued = true;
        }
      }
      const size_t room = input.max_size() - input.size();
      if (sent == stream.size() || room == 0)
        break;
      const size_t n = std::min({next_piece(), room, stream.size() - sent});
      std::memcpy(input.prepare(n).data(), stream.data() + sent, n);
      input.commit(n);
      sent += n;
    }

    Outcome outcome;
    outcome.screened = screenings == 1;
    outcome.chunked = chunked;
    if (progress == Progress::need_more) {
      if (input.size() == input.max_size()) {
        // The connection stops reading and answers 408 at the deadline.
        outcome.kind = Outcome::refused;
        outcome.status = kStalled;
        outcomes.push_back(outcome);
        break;
      }
      if (!options.finish || !reader.begun()) {
        if (reader.begun())
          outcomes.push_back(outcome);
        break;
      }
      progress = reader.finish();
      require_budget();
    }
    if (progress == Progress::refused) {
      refused = true;
      const HttpResponse &refusal = reader.refusal();
      const int s = refusal.status;
      require(s == 400 || s == 408 || s == 413 || s == 415 || s == 417 || s == 431 || s == 501 ||
                  s == 503 || s == kScreenStatus,
              "a refusal has a known status");
      require(nlohmann::json::accept(refusal.body), "a refusal's body is JSON");
      if (s == kScreenStatus)
        require(screenings == 1 && reader.answer_headers().size() == 1,
                "a screen's refusal keeps the screen's answer headers");
      if (screenings == 0)
        require(reader.answer_headers().empty(), "no answer headers without screening");
      require(reader.feed(input) == Progress::refused, "a refused reader stays refused");
      outcome.kind = Outcome::refused;
      outcome.status = s;
      outcomes.push_back(outcome);
      break;
    }

    require(screenings == 1, "a completed request was screened");
    require(reader.answer_headers().size() == 1, "the screen's answer headers are kept");
    HttpRequest request = reader.take();
    const HttpMessage &message = request.message;
    require(message.body().size() <= kBodyBytes, "a completed body is within the limit");
    require(field_count(message) <= kHeaderCount, "a completed request has at most 8 fields");
    // Beast takes only CRLF, so the first empty line ends the head.
    const size_t head_end = request_bytes.find("\r\n\r\n");
    require(head_end != std::string_view::npos && head_end + 4 <= kHeaderBytes,
            "a completed head is within the header limit");
    require(request.remote_address == "fuzz", "the request keeps the client's address");
    require_accepted_head(message, request.path);
    outcome.kind = Outcome::complete;
    outcome.method = std::string(message.method_string());
    outcome.target = std::string(message.target());
    outcome.path = request.path;
    outcome.body = message.body();
    outcome.version = message.version();
    for (const auto &field : message)
      outcome.fields.emplace_back(std::string(field.name_string()), std::string(field.value()));
    outcomes.push_back(std::move(outcome));
    // The connection closes after answering a request that does not keep
    // it alive: what the client sent after it is never read.
    const bool keep_alive = message.keep_alive();
    kept.push_back(std::move(request));
    if (kept.size() > options.kept_alive)
      kept.pop_front();
    if (!keep_alive)
      break;
  }
  kept.clear();
  elsewhere.reset();
  require(budget->in_use() == 0, "every body's budget is given back");
  return outcomes;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  Options options;
  options.kept_alive = data[0] & 3;
  options.finish = (data[0] & 4) != 0;
  options.held_elsewhere = ((data[0] >> 3) & 7) * 256;
  options.seed = data[1];
  const std::string_view stream(reinterpret_cast<const char *>(data + 2), size - 2);

  const std::vector<Outcome> whole = serve(stream, options);
  static const size_t largest[] = {1, 3, 16, 200};
  options.largest_piece = largest[data[0] >> 6];
  const std::vector<Outcome> pieces = serve(stream, options);
  if (whole.size() != pieces.size() ||
      !std::equal(whole.begin(), whole.end(), pieces.begin(), same)) {
    std::fprintf(stderr, "in large pieces:\n%sin pieces of at most %zu bytes:\n%s",
                 describe(whole).c_str(), options.largest_piece, describe(pieces).c_str());
    require(false, "the pieces the bytes arrive in change nothing");
  }
  return 0;
}
