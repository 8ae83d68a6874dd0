// Environment memory (reference §6): a FIFO of past environments with their measured win rate
// and hint regret, used to seed designer prompts with frontier examples. Not thread-safe.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rollout/prompts.h"

namespace spade::trainer {

struct MemoryRecord {
  std::string path;       // program file under envs/
  std::string skill;      // skill slug
  std::string code;       // first 2000 characters of the program
  double win_rate = 0;    // fraction of no-hint plays with reward > 0 at the regeneration step
  double regret = 0;      // raw hint regret
  int64_t rollout_id = 0;
};

class EnvMemory {
 public:
  /// `capacity`: newest records kept (reference §6: 200). `band_low/high`: the positive-seed win-rate
  /// band [0.15, 0.85]; negatives are > 0.9 (too easy) or < 0.1 (too hard).
  EnvMemory(int capacity, double band_low, double band_high);

  /// Adds a record, dropping the oldest beyond capacity. Code is cut to 2000 characters.
  void add(MemoryRecord record);

  /// Reference environments for a designer prompt of `skill` (reference §6): positives are
  /// same-skill records with win rate in the band, sorted by regret descending, pool = top
  /// max(3n, 10), `n` sampled without replacement; plus one same-skill negative when one exists.
  std::vector<rollout::ReferenceEnv> references(const std::string& skill, int n, std::mt19937_64& rng) const;

  const std::vector<MemoryRecord>& records() const { return records_; }

  /// JSON array of records; save writes atomically. load replaces the contents; a missing file is
  /// an empty memory; malformed JSON throws spade::Error naming the file.
  void save(const std::string& path) const;
  void load(const std::string& path);

 private:
  int capacity_;
  double band_low_, band_high_;
  std::vector<MemoryRecord> records_;
};

}  // namespace spade::trainer
