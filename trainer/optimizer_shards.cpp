#include "trainer/optimizer_shards.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"

namespace fs = std::filesystem;

namespace spade::trainer {

namespace {

const std::regex kShardName(R"(optimizer_shard_(\d{5})_of_(\d{5})\.pt)");

torch::Tensor int64s(const std::vector<int64_t>& v) {
  return torch::tensor(v, torch::TensorOptions().dtype(torch::kLong));
}

// One saved shard, read and checked against its name and the layout `opt` expects.
struct SavedShard {
  int64_t begin = 0, end = 0;
  std::vector<int64_t> steps;
  torch::Tensor exp_avg, exp_avg_sq;
};

SavedShard read_shard(const std::string& path, int rank, int world, const ShardedAdamW& opt) {
  const std::string where = "optimizer shard " + path;
  torch::serialize::InputArchive a;
  torch::Tensor total, begin, end, file_rank, file_world, numels, steps;
  SavedShard s;
  try {
    a.load_from(path);
    a.read("total", total);
    a.read("begin", begin);
    a.read("end", end);
    a.read("rank", file_rank);
    a.read("world_size", file_world);
    a.read("numels", numels);
    a.read("steps", steps);
    a.read("exp_avg", s.exp_avg);
    a.read("exp_avg_sq", s.exp_avg_sq);
  } catch (const c10::Error& e) {
    throw Error(where + " is unreadable or malformed (" + e.what_without_backtrace() +
                "); it is written by the sharded optimizer's checkpoint (trainer/optimizer_shards.h)");
  }
  if (file_rank.item<int64_t>() != rank || file_world.item<int64_t>() != world)
    throw Error(where + " says it is rank " + std::to_string(file_rank.item<int64_t>()) + " of " +
                std::to_string(file_world.item<int64_t>()) + ", but its name says rank " + std::to_string(rank) +
                " of " + std::to_string(world));
  if (total.item<int64_t>() != opt.total_numel() || numels.numel() != static_cast<int64_t>(opt.numels().size()) ||
      !torch::equal(numels.to(torch::kLong), int64s(opt.numels())))
    throw Error(where + " covers a model of " + std::to_string(total.item<int64_t>()) + " parameters in " +
                std::to_string(numels.numel()) + " tensors, not this one's " + std::to_string(opt.total_numel()) +
                " in " + std::to_string(opt.numels().size()) + " (a checkpoint of another model shape?)");
  const FlatRange expected = shard_range(opt.total_numel(), rank, world);
  s.begin = begin.item<int64_t>();
  s.end = end.item<int64_t>();
  if (s.begin != expected.begin || s.end != expected.end)
    throw Error(where + " holds [" + std::to_string(s.begin) + ", " + std::to_string(s.end) + ") but rank " +
                std::to_string(rank) + " of " + std::to_string(world) + " owns [" + std::to_string(expected.begin) +
                ", " + std::to_string(expected.end) + ")");
  for (const torch::Tensor* t : {&s.exp_avg, &s.exp_avg_sq})
    if (t->dim() != 1 || t->size(0) != s.end - s.begin || t->scalar_type() != torch::kFloat)
      throw Error(where + ": a moment of " + std::to_string(t->numel()) + " elements (" +
                  std::string(c10::toString(t->scalar_type())) + ") for a range of " + std::to_string(s.end - s.begin) +
                  " (float32 expected)");
  const torch::Tensor st = steps.to(torch::kLong).contiguous();
  s.steps.assign(st.data_ptr<int64_t>(), st.data_ptr<int64_t>() + st.numel());
  return s;
}

}  // namespace

std::string optimizer_shard_file(int rank, int world_size) {
  char name[64];
  std::snprintf(name, sizeof(name), "optimizer_shard_%05d_of_%05d.pt", rank, world_size);
  return name;
}

std::string save_optimizer_shard(const ShardedAdamW& opt, const std::string& dir) {
  const std::string path = dir + "/" + optimizer_shard_file(opt.rank(), opt.world_size());
  std::ostringstream bytes;
  try {
    torch::serialize::OutputArchive a;
    a.write("total", torch::tensor(opt.total_numel(), torch::kLong));
    a.write("begin", torch::tensor(opt.shard().begin, torch::kLong));
    a.write("end", torch::tensor(opt.shard().end, torch::kLong));
    a.write("rank", torch::tensor(static_cast<int64_t>(opt.rank()), torch::kLong));
    a.write("world_size", torch::tensor(static_cast<int64_t>(opt.world_size()), torch::kLong));
    a.write("numels", int64s(opt.numels()));
    a.write("steps", int64s(opt.step_counts()));
    a.write("exp_avg", opt.exp_avg().cpu());
    a.write("exp_avg_sq", opt.exp_avg_sq().cpu());
    a.save_to(bytes);
  } catch (const c10::Error& e) {
    throw Error("cannot serialise optimizer shard " + path + ": " + e.what_without_backtrace());
  }
  write_file_atomic(path, bytes.str());
  return path;
}

bool has_optimizer_shards(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (std::regex_match(e.path().filename().string(), kShardName)) return true;
  return false;
}

void load_optimizer_shards(ShardedAdamW& opt, const std::string& dir) {
  // The set of saved shards: one world size, every rank present.
  std::map<int, std::string> files;
  int world = 0;
  std::string first_name;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, kShardName)) continue;
    const int r = std::stoi(m[1].str()), w = std::stoi(m[2].str());
    if (world == 0) {
      world = w;
      first_name = name;
    } else if (w != world) {
      throw Error("optimizer shard " + dir + "/" + name + " was written by " + std::to_string(w) + " ranks but " +
                  dir + "/" + first_name + " by " + std::to_string(world) + ": mixed shard sets");
    }
    files[r] = e.path().string();
  }
  if (world == 0)
    throw Error("no optimizer shard files (optimizer_shard_*_of_*.pt) in " + dir +
                (ec ? " (" + ec.message() + ")" : std::string()) +
                ": the checkpoint was not written with distributed.sharding optimizer or gradients");
  for (int r = 0; r < world; ++r)
    if (!files.count(r))
      throw Error("optimizer shard " + dir + "/" + optimizer_shard_file(r, world) + " is missing (the set of " +
                  std::to_string(world) + " shards is incomplete)");
  for (const auto& [r, path] : files)
    if (r >= world) throw Error("optimizer shard " + path + " names rank " + std::to_string(r) + " of " + std::to_string(world));

  // Re-shard: copy the overlap of every saved range with this rank's range.
  const FlatRange mine = opt.shard();
  torch::Tensor exp_avg = torch::zeros({mine.size()}, torch::kFloat);
  torch::Tensor exp_avg_sq = torch::zeros({mine.size()}, torch::kFloat);
  std::vector<int64_t> steps;
  for (int r = 0; r < world; ++r) {
    const FlatRange saved = shard_range(opt.total_numel(), r, world);
    const int64_t lo = std::max(saved.begin, mine.begin), hi = std::min(saved.end, mine.end);
    const bool overlaps = lo < hi;
    if (!overlaps && !(r == 0 && mine.size() == 0)) continue;  // an empty range still needs the step counts
    const SavedShard s = read_shard(files[r], r, world, opt);
    if (steps.empty()) steps = s.steps;
    if (!overlaps) continue;
    exp_avg.narrow(0, lo - mine.begin, hi - lo).copy_(s.exp_avg.narrow(0, lo - saved.begin, hi - lo));
    exp_avg_sq.narrow(0, lo - mine.begin, hi - lo).copy_(s.exp_avg_sq.narrow(0, lo - saved.begin, hi - lo));
  }
  opt.restore(steps, exp_avg, exp_avg_sq);
}

}  // namespace spade::trainer
