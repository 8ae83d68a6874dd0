#include "trainer/optimizer_shards.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
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

// One saved shard, read and checked against its name and the layout `opt` expects: its pieces
// (parameter, offset, length) in shard order; the moments are read only when wanted (read_moments).
struct SavedShard {
  struct Part {
    int64_t param, offset, len, shard_offset;
  };
  std::vector<Part> parts;
  int64_t size = 0;
  std::vector<int64_t> steps;
  torch::serialize::InputArchive archive;
  std::string where;
  torch::Tensor exp_avg, exp_avg_sq;

  void read_moments() {
    try {
      archive.read("exp_avg", exp_avg);
      archive.read("exp_avg_sq", exp_avg_sq);
    } catch (const c10::Error& e) {
      throw Error(where + " is unreadable or malformed (" + e.what_without_backtrace() + ")");
    }
    for (const torch::Tensor* t : {&exp_avg, &exp_avg_sq})
      if (t->dim() != 1 || t->size(0) != size || t->scalar_type() != torch::kFloat)
        throw Error(where + ": a moment of " + std::to_string(t->numel()) + " elements (" +
                    std::string(c10::toString(t->scalar_type())) + ") for a shard of " + std::to_string(size) +
                    " (float32 expected)");
  }
};

std::unique_ptr<SavedShard> read_shard(const std::string& path, int rank, int world, const ShardedAdamW& opt) {
  auto s = std::make_unique<SavedShard>();
  s->where = "optimizer shard " + path;
  torch::Tensor total, begin, end, file_rank, file_world, numels, steps, pieces;
  bool has_pieces = false;
  try {
    s->archive.load_from(path);
    s->archive.read("total", total);
    s->archive.read("begin", begin);
    s->archive.read("end", end);
    s->archive.read("rank", file_rank);
    s->archive.read("world_size", file_world);
    s->archive.read("numels", numels);
    s->archive.read("steps", steps);
    has_pieces = s->archive.try_read("pieces", pieces);
  } catch (const c10::Error& e) {
    throw Error(s->where + " is unreadable or malformed (" + e.what_without_backtrace() +
                "); it is written by the sharded optimizer's checkpoint (trainer/optimizer_shards.h)");
  }
  const std::string& where = s->where;
  if (file_rank.item<int64_t>() != rank || file_world.item<int64_t>() != world)
    throw Error(where + " says it is rank " + std::to_string(file_rank.item<int64_t>()) + " of " +
                std::to_string(file_world.item<int64_t>()) + ", but its name says rank " + std::to_string(rank) +
                " of " + std::to_string(world));
  if (total.item<int64_t>() != opt.total_numel() || numels.numel() != static_cast<int64_t>(opt.numels().size()) ||
      !torch::equal(numels.to(torch::kLong), int64s(opt.numels())))
    throw Error(where + " covers a model of " + std::to_string(total.item<int64_t>()) + " parameters in " +
                std::to_string(numels.numel()) + " tensors, not this one's " + std::to_string(opt.total_numel()) +
                " in " + std::to_string(opt.numels().size()) + " (a checkpoint of another model shape?)");
  const std::vector<int64_t>& n = opt.numels();
  if (has_pieces) {
    if (pieces.dim() != 2 || pieces.size(1) != 3)
      throw Error(where + ": pieces must be [n, 3] (parameter, offset, length)");
    const torch::Tensor pc = pieces.to(torch::kLong).contiguous();
    const int64_t* v = pc.data_ptr<int64_t>();
    for (int64_t k = 0; k < pc.size(0); ++k) {
      const int64_t param = v[3 * k], offset = v[3 * k + 1], len = v[3 * k + 2];
      if (param < 0 || param >= static_cast<int64_t>(n.size()) || offset < 0 || len <= 0 || offset + len > n[param])
        throw Error(where + ": piece " + std::to_string(k) + " (parameter " + std::to_string(param) + ", [" +
                    std::to_string(offset) + ", " + std::to_string(offset + len) + ")) lies outside the parameters");
      s->parts.push_back({param, offset, len, s->size});
      s->size += len;
    }
  } else {  // written before ZeRO-3: ZeRO-1/2's range of the flat layout
    const FlatRange expected = shard_range(opt.total_numel(), rank, world);
    const int64_t b = begin.item<int64_t>(), e = end.item<int64_t>();
    if (b != expected.begin || e != expected.end)
      throw Error(where + " holds [" + std::to_string(b) + ", " + std::to_string(e) + ") but rank " +
                  std::to_string(rank) + " of " + std::to_string(world) + " owns [" + std::to_string(expected.begin) +
                  ", " + std::to_string(expected.end) + ")");
    int64_t at = 0;
    for (size_t i = 0; i < n.size(); ++i) {
      const int64_t lo = std::max(b, at), hi = std::min(e, at + n[i]);
      if (lo < hi) s->parts.push_back({static_cast<int64_t>(i), lo - at, hi - lo, lo - b});
      at += n[i];
    }
    s->size = e - b;
  }
  const torch::Tensor st = steps.to(torch::kLong).contiguous();
  s->steps.assign(st.data_ptr<int64_t>(), st.data_ptr<int64_t>() + st.numel());
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
    std::vector<int64_t> pieces;
    for (const ShardedAdamW::Piece& pc : opt.pieces()) {
      pieces.push_back(static_cast<int64_t>(pc.param));
      pieces.push_back(pc.param_offset);
      pieces.push_back(pc.len);
    }
    a.write("pieces", int64s(pieces).view({-1, 3}));
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
                ": the checkpoint was not written with distributed.sharding optimizer, gradients or full");
  for (int r = 0; r < world; ++r)
    if (!files.count(r))
      throw Error("optimizer shard " + dir + "/" + optimizer_shard_file(r, world) + " is missing (the set of " +
                  std::to_string(world) + " shards is incomplete)");
  for (const auto& [r, path] : files)
    if (r >= world) throw Error("optimizer shard " + path + " names rank " + std::to_string(r) + " of " + std::to_string(world));

  // Re-shard: copy the overlap of every saved piece with each of this rank's pieces (any world size,
  // any mode); a file none of whose pieces overlaps is opened for its step counts only.
  std::vector<std::vector<const ShardedAdamW::Piece*>> mine(opt.numels().size());
  for (const ShardedAdamW::Piece& pc : opt.pieces()) mine[pc.param].push_back(&pc);
  const int64_t size = opt.shard().size();
  torch::Tensor exp_avg = torch::zeros({size}, torch::kFloat);
  torch::Tensor exp_avg_sq = torch::zeros({size}, torch::kFloat);
  std::vector<int64_t> steps;
  int64_t covered = 0;
  for (int r = 0; r < world; ++r) {
    const std::unique_ptr<SavedShard> s = read_shard(files[r], r, world, opt);
    if (steps.empty()) steps = s->steps;
    bool read = false;
    for (const SavedShard::Part& sp : s->parts)
      for (const ShardedAdamW::Piece* mp : mine[sp.param]) {
        const int64_t lo = std::max(sp.offset, mp->param_offset);
        const int64_t hi = std::min(sp.offset + sp.len, mp->param_offset + mp->len);
        if (lo >= hi) continue;
        if (!read) s->read_moments();
        read = true;
        const int64_t from = sp.shard_offset + lo - sp.offset, to = mp->shard_offset + lo - mp->param_offset;
        exp_avg.narrow(0, to, hi - lo).copy_(s->exp_avg.narrow(0, from, hi - lo));
        exp_avg_sq.narrow(0, to, hi - lo).copy_(s->exp_avg_sq.narrow(0, from, hi - lo));
        covered += hi - lo;
      }
  }
  if (covered != size)
    throw Error("optimizer shards in " + dir + " cover " + std::to_string(covered) + " of the " + std::to_string(size) +
                " elements rank " + std::to_string(opt.rank()) + " owns (pieces missing or overlapping)");
  opt.restore(steps, exp_avg, exp_avg_sq);
}

}  // namespace spade::trainer
