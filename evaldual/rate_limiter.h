// Request-rate limits for model endpoints: a token bucket (the arithmetic, clock passed in) and a
// blocking, thread-safe limiter over it, shared process-wide per key (reference §5: "Rate limit: per
// (model, provider) requests-per-minute, process-wide spacing").
//
// Token bucket (the standard algorithm): the bucket holds up to `burst` tokens and refills at
// requests_per_minute / 60 tokens per second; each request takes one token. A request that finds
// fewer than one token still takes it (the count goes negative) and waits until the refill has
// covered it, so concurrent callers queue in arrival order at exactly the configured spacing.
//
// Thread-safety: TokenBucket is not thread-safe (a plain value); RateLimiter is thread-safe.
#pragma once
#include <memory>
#include <mutex>
#include <string>

namespace spade::evaldual {

/// Token-bucket arithmetic on an explicit clock (seconds, any monotonic origin).
class TokenBucket {
 public:
  /// requests_per_minute <= 0 means unlimited (reserve() always returns 0). burst >= 1 tokens
  /// (throws spade::Error naming the value otherwise). The bucket starts full at time `now_s`.
  TokenBucket(double requests_per_minute, double burst, double now_s);

  /// Takes one token at time `now_s` (non-decreasing across calls); returns how many seconds the
  /// caller must wait before sending (0 when a token was available).
  double reserve(double now_s);

  double requests_per_minute() const { return rpm_; }

 private:
  double rpm_, burst_, tokens_, last_s_;
};

/// A blocking limiter: acquire() sleeps until the caller may send. Thread-safe.
class RateLimiter {
 public:
  /// See TokenBucket. Default burst 1: strict spacing of 60 / requests_per_minute seconds.
  explicit RateLimiter(double requests_per_minute, double burst = 1.0);

  /// Blocks until a request may be sent; returns the seconds waited (>= 0).
  double acquire();

  double requests_per_minute() const { return rpm_; }

  /// The process-wide limiter for `key` (e.g. "model|provider"), created on first use with
  /// `requests_per_minute`. Later calls with the same key get the same limiter, whatever rate they
  /// ask for (the first rate wins; endpoints sharing a (model, provider) key should agree).
  /// Returns nullptr when requests_per_minute <= 0 and no limiter exists for the key. Thread-safe.
  static std::shared_ptr<RateLimiter> shared(const std::string& key, double requests_per_minute);

 private:
  double rpm_;
  std::mutex mu_;
  TokenBucket bucket_;
};

}  // namespace spade::evaldual
