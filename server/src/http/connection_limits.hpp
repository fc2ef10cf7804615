#pragma once
// What the server lets clients hold at once: open connections (in all and
// per client address), and bytes of request bodies (being read, or read and
// waiting to be parsed), so that a flood of connections or of large bodies
// is refused at the door instead of growing the process.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

namespace bonsai::server {

// Used by the I/O thread only.
class ConnectionCounter {
public:
  ConnectionCounter(int32_t max_total, int32_t max_per_client)
      : max_total_(max_total), max_per_client_(max_per_client) {}

  enum class Admission { admitted, server_full, client_full };
  // Counts a new connection from `address` unless a limit is reached.
  Admission admit(const std::string &address);
  void release(const std::string &address);
  int32_t open() const { return total_; }

private:
  const int32_t max_total_;
  const int32_t max_per_client_;
  int32_t total_ = 0;
  std::unordered_map<std::string, int32_t> per_client_;
};

// Thread-safe: a share may be given back on another thread than it was
// taken on (a request body is dropped where it was parsed).
class BodyBudget : public std::enable_shared_from_this<BodyBudget> {
public:
  // The first `free_per_body` bytes of every body are not charged: a small
  // request is never refused because large ones fill the budget (the
  // connection limit bounds what that allowance adds up to).
  explicit BodyBudget(size_t capacity, size_t free_per_body = 0)
      : capacity_(capacity), free_per_body_(free_per_body) {}

  // The bytes of the budget one request body holds; given back when the
  // share is destroyed.
  class Share {
  public:
    explicit Share(std::shared_ptr<BodyBudget> budget) : budget_(std::move(budget)) {}
    ~Share();
    Share(const Share &) = delete;
    Share &operator=(const Share &) = delete;
    // Holds `bytes` in all (never less than already held); false, holding
    // what it held before, when the budget cannot give the difference.
    bool grow_to(size_t bytes);
    size_t bytes() const { return bytes_; }

  private:
    std::shared_ptr<BodyBudget> budget_;
    size_t bytes_ = 0;   // the body's size so far
    size_t charged_ = 0; // of it, taken from the budget
  };

  std::unique_ptr<Share> open_share() { return std::make_unique<Share>(shared_from_this()); }
  size_t capacity() const { return capacity_; }
  size_t free_per_body() const { return free_per_body_; }
  size_t in_use() const { return in_use_.load(); }

private:
  bool take(size_t bytes);
  void give_back(size_t bytes) { in_use_.fetch_sub(bytes); }

  const size_t capacity_;
  const size_t free_per_body_;
  std::atomic<size_t> in_use_{0};
};

} // namespace bonsai::server
