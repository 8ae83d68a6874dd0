#include "evaldual/rate_limiter.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "common/error.h"

namespace spade::evaldual {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

TokenBucket::TokenBucket(double requests_per_minute, double burst, double now_s)
    : rpm_(requests_per_minute), burst_(burst), tokens_(burst), last_s_(now_s) {
  if (!(burst >= 1.0)) throw Error("TokenBucket: burst " + std::to_string(burst) + " must be >= 1 token");
}

double TokenBucket::reserve(double now_s) {
  if (rpm_ <= 0) return 0.0;
  double rate = rpm_ / 60.0;  // tokens per second
  if (now_s > last_s_) {
    tokens_ = std::min(burst_, tokens_ + (now_s - last_s_) * rate);
    last_s_ = now_s;
  }
  tokens_ -= 1.0;
  return tokens_ >= 0.0 ? 0.0 : -tokens_ / rate;
}

RateLimiter::RateLimiter(double requests_per_minute, double burst)
    : rpm_(requests_per_minute), bucket_(requests_per_minute, burst, now_seconds()) {}

double RateLimiter::acquire() {
  double wait;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wait = bucket_.reserve(now_seconds());
  }
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  return wait;
}

std::shared_ptr<RateLimiter> RateLimiter::shared(const std::string& key, double requests_per_minute) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<RateLimiter>> limiters;
  std::lock_guard<std::mutex> lock(mu);
  auto it = limiters.find(key);
  if (it != limiters.end()) return it->second;
  if (requests_per_minute <= 0) return nullptr;
  auto l = std::make_shared<RateLimiter>(requests_per_minute);
  limiters.emplace(key, l);
  return l;
}

}  // namespace spade::evaldual
