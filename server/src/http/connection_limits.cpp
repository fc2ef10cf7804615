#include "http/connection_limits.hpp"

#include <algorithm>

namespace bonsai::server {

ConnectionCounter::Admission ConnectionCounter::admit(const std::string &address) {
  if (total_ >= max_total_)
    return Admission::server_full;
  int32_t &mine = per_client_[address];
  if (mine >= max_per_client_) {
    if (mine == 0)
      per_client_.erase(address);
    return Admission::client_full;
  }
  ++mine;
  ++total_;
  return Admission::admitted;
}

void ConnectionCounter::release(const std::string &address) {
  const auto it = per_client_.find(address);
  if (it == per_client_.end())
    return;
  --total_;
  if (--it->second == 0)
    per_client_.erase(it);
}

bool BodyBudget::take(size_t bytes) {
  size_t used = in_use_.load();
  do {
    if (bytes > capacity_ - used)
      return false;
  } while (!in_use_.compare_exchange_weak(used, used + bytes));
  return true;
}

BodyBudget::Share::~Share() {
  budget_->give_back(charged_);
}

bool BodyBudget::Share::grow_to(size_t bytes) {
  if (bytes <= bytes_)
    return true;
  const size_t charge = bytes > budget_->free_per_body_ ? bytes - budget_->free_per_body_ : 0;
  if (charge > charged_ && !budget_->take(charge - charged_))
    return false;
  charged_ = std::max(charged_, charge);
  bytes_ = bytes;
  return true;
}

} // namespace bonsai::server
