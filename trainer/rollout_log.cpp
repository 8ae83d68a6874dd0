#include "trainer/rollout_log.h"

#include <hdf5.h>

#include <filesystem>
#include <functional>

#include "common/error.h"
#include "common/fnv1a.h"

namespace fs = std::filesystem;

namespace spade::trainer {

namespace {

// 2: env_source_hash is the standard FNV-1a (format 1 used an offset basis one digit short), and step,
// rollout_id and born count from 1 as the console, metrics and checkpoint names do.
// 3: environment rows are written when their window closes, with closed, window_plays, win_rate and
// regret; resume cuts them by closed (format 2 wrote them at admission and cut them by born).
constexpr const char* kFormat = "spade-rollouts-4";

struct Column {
  const char* name;
  hid_t (*file_type)();
  const char* description;
};

// Type getters (HDF5's H5T_* macros are function calls after H5open, not constants).
hid_t i64() { return H5T_STD_I64LE; }
hid_t u64() { return H5T_STD_U64LE; }
hid_t i32() { return H5T_STD_I32LE; }
hid_t u8() { return H5T_STD_U8LE; }
hid_t f64() { return H5T_IEEE_F64LE; }
hid_t f32() { return H5T_IEEE_F32LE; }

// Per-row columns and ragged columns (values + NAME_offsets, or sharing another's offsets).
const std::vector<Column>& episode_scalars() {
  static const std::vector<Column> c = {
      {"id", i64, "episode id: row index since the start of the run"},
      {"step", i64, "the step (numbered from 1, as in metrics.jsonl) whose optimizer update trained the episode "
                    "(hinted plays: the step they ran at)"},
      {"rollout_id", i64, "the step that produced the episode (designer samples: k steps before `step`)"},
      {"role", u8, "0 agent, 1 designer, 2 hint (root attribute role_names)"},
      {"hinted", u8, "1 for a hinted play (the hint appended to the first observation); never trained"},
      {"trained", u8, "1 when the episode was part of the optimizer batch"},
      {"rewards", f64, "episode reward (agents) or designer reward (designers)"},
      {"advantages", f64, "per-sequence advantage the update used (0 for untrained rows)"},
      {"terminations", u8, "the environment reported terminated"},
      {"truncations", u8, "the episode was truncated (turn/context limit, response without EOS)"},
      {"total_steps", i32, "environment turns of the episode (0 for designer samples)"},
      {"env_source_hash", u64, "FNV-1a 64 of the environment program; 0 when unknown"}};
  return c;
}
struct Ragged {
  const char* name;
  hid_t (*file_type)();
  const char* offsets;  // offsets dataset
  const char* description;
};
const std::vector<Ragged>& episode_ragged() {
  static const std::vector<Ragged> c = {
      {"tokens", i32, "tokens_offsets", "token ids of the whole sequence (prompt, responses, observations)"},
      {"loss_mask", u8, "tokens_offsets", "1 for tokens sampled by the policy, 0 otherwise"},
      {"rollout_logprobs", f32, "tokens_offsets", "sampler logprob of each token (0 where loss_mask is 0)"},
      {"token_kinds", u8, "tokens_offsets",
       "0 context (prompt, template, observation), 1 sampled, 2 sampled in a response that calls tools, "
       "3 a tool turn returning results (tool-use episodes)"},
      {"env_id", u8, "env_id_offsets", "environment id, UTF-8"},
      {"skill", u8, "skill_offsets", "skill slug, UTF-8"}};
  return c;
}
const std::vector<Column>& env_scalars() {
  static const std::vector<Column> c = {
      {"born", i64, "the step of the regeneration that admitted it"},
      {"closed", i64, "the step that wrote the row, when the environment's window closed (the regeneration "
                      "replacing it, or the run's last step)"},
      {"from_seed", u8, "1 for a seed environment (a fill-in of an empty slot, or a fixed-pool draw)"},
      {"source_hash", u64, "FNV-1a 64 of the program"},
      {"window_plays", i64, "no-hint plays of the environment over its window"},
      {"win_rate", f64, "share of those plays with reward > 0 (NaN with none)"},
      {"regret", f64, "hint regret r_hint - r_nohint of its regeneration step (NaN in fixed_pool mode: no hint)"}};
  return c;
}
const std::vector<Ragged>& env_ragged() {
  static const std::vector<Ragged> c = {{"id", u8, "id_offsets", "environment id, UTF-8"},
                                        {"skill", u8, "skill_offsets", "skill slug, UTF-8"},
                                        {"source", u8, "source_offsets", "the program, UTF-8"},
                                        {"hint", u8, "hint_offsets", "the hint written for it, UTF-8"}};
  return c;
}

void check(herr_t rc, const std::string& what, const std::string& path) {
  if (rc < 0) throw Error("rollouts.h5: " + what + " failed for " + path);
}
hid_t check_id(hid_t id, const std::string& what, const std::string& path) {
  if (id < 0) throw Error("rollouts.h5: " + what + " failed for " + path);
  return id;
}

// RAII for hid_t handles.
struct Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

void set_string_attr(hid_t obj, const char* name, const std::string& value) {
  Handle type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.id, std::max<size_t>(1, value.size()));
  Handle space{H5Screate(H5S_SCALAR), H5Sclose};
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  Handle attr{H5Acreate2(obj, name, type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  H5Awrite(attr.id, type.id, value.c_str());
}

std::string get_string_attr(hid_t obj, const char* name) {
  Handle attr{H5Aopen(obj, name, H5P_DEFAULT), H5Aclose};
  if (attr.id < 0) return "";
  Handle type{H5Aget_type(attr.id), H5Tclose};
  if (H5Tget_class(type.id) != H5T_STRING) return "";
  if (H5Tis_variable_str(type.id) > 0) {  // as h5py writes str attributes
    Handle mem{H5Tcopy(H5T_C_S1), H5Tclose};
    H5Tset_size(mem.id, H5T_VARIABLE);
    H5Tset_cset(mem.id, H5Tget_cset(type.id));  // h5py writes UTF-8; no ASCII conversion
    char* buf = nullptr;
    if (H5Aread(attr.id, mem.id, &buf) < 0 || buf == nullptr) return "";
    std::string value(buf);
    H5free_memory(buf);
    return value;
  }
  std::string value(H5Tget_size(type.id), '\0');
  Handle mem{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(mem.id, value.size());
  if (H5Aread(attr.id, mem.id, value.data()) < 0) return "";
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

void set_int_attr(hid_t obj, const char* name, int64_t value) {
  Handle space{H5Screate(H5S_SCALAR), H5Sclose};
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  Handle attr{H5Acreate2(obj, name, H5T_STD_I64LE, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  H5Awrite(attr.id, H5T_NATIVE_INT64, &value);
}

void create_dataset(hid_t group, const std::string& name, hid_t type, hsize_t chunk, const char* description,
                    const std::string& path) {
  hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunks[1] = {chunk};
  Handle space{H5Screate_simple(1, dims, maxdims), H5Sclose};
  Handle plist{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  H5Pset_chunk(plist.id, 1, chunks);
  H5Pset_shuffle(plist.id);
  H5Pset_deflate(plist.id, 4);
  Handle ds{check_id(H5Dcreate2(group, name.c_str(), type, space.id, H5P_DEFAULT, plist.id, H5P_DEFAULT),
                     "creating dataset " + name, path),
            H5Dclose};
  set_string_attr(ds.id, "description", description);
}

hsize_t length(hid_t ds) {
  Handle space{H5Dget_space(ds), H5Sclose};
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space.id, &n, nullptr);
  return n;
}

template <class T>
void append_values(hid_t group, const std::string& name, hid_t mem_type, const std::vector<T>& values,
                   const std::string& path) {
  Handle ds{check_id(H5Dopen2(group, name.c_str(), H5P_DEFAULT), "opening " + name, path), H5Dclose};
  if (values.empty()) return;
  const hsize_t n = length(ds.id), k = values.size(), total = n + k;
  check(H5Dset_extent(ds.id, &total), "extending " + name, path);
  Handle file_space{H5Dget_space(ds.id), H5Sclose};
  hsize_t start = n;
  H5Sselect_hyperslab(file_space.id, H5S_SELECT_SET, &start, nullptr, &k, nullptr);
  Handle mem_space{H5Screate_simple(1, &k, nullptr), H5Sclose};
  check(H5Dwrite(ds.id, mem_type, mem_space.id, file_space.id, H5P_DEFAULT, values.data()), "writing " + name, path);
}

std::vector<int64_t> read_i64(hid_t group, const std::string& name, const std::string& path) {
  Handle ds{check_id(H5Dopen2(group, name.c_str(), H5P_DEFAULT), "opening " + name, path), H5Dclose};
  std::vector<int64_t> out(length(ds.id));
  if (!out.empty())
    check(H5Dread(ds.id, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "reading " + name, path);
  return out;
}

void resize(hid_t group, const std::string& name, hsize_t n, const std::string& path) {
  Handle ds{check_id(H5Dopen2(group, name.c_str(), H5P_DEFAULT), "opening " + name, path), H5Dclose};
  check(H5Dset_extent(ds.id, &n), "resizing " + name, path);
}

// Ragged text/arrays: values appended, offsets continue from the last one.
struct RaggedBuffer {
  std::vector<int64_t> offsets;
  int64_t base = 0;
};

hid_t open_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors are reported as spade::Error instead
  return H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
}

void create_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const std::string tmp = path + ".tmp";
  fs::remove(tmp);
  {
    Handle file{check_id(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "creating", tmp), H5Fclose};
    set_string_attr(file.id, "format", kFormat);
    set_string_attr(file.id, "role_names", "agent,designer,hint");
    set_string_attr(file.id, "text_encoding", "UTF-8 bytes in uint8 datasets, row i = [NAME_offsets[i], NAME_offsets[i+1])");
    set_int_attr(file.id, "total_episodes", 0);
    for (const char* g : {"episodes", "environments"}) {
      Handle group{H5Gcreate2(file.id, g, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
      const bool ep = std::string(g) == "episodes";
      for (const Column& c : ep ? episode_scalars() : env_scalars())
        create_dataset(group.id, c.name, c.file_type(), 1024, c.description, path);
      for (const Ragged& r : ep ? episode_ragged() : env_ragged()) {
        create_dataset(group.id, r.name, r.file_type(), 1 << 16, r.description, path);
        if (H5Lexists(group.id, r.offsets, H5P_DEFAULT) <= 0) {
          create_dataset(group.id, r.offsets, H5T_STD_I64LE, 1024, "int64 row offsets, N + 1 entries", path);
          append_values<int64_t>(group.id, r.offsets, H5T_NATIVE_INT64, {0}, path);
        }
      }
    }
  }
  fs::rename(tmp, path);
}

// The last entry of an offsets dataset (the total length of its values).
int64_t last_offset(hid_t group, const std::string& name, const std::string& path) {
  Handle ds{check_id(H5Dopen2(group, name.c_str(), H5P_DEFAULT), "opening " + name, path), H5Dclose};
  const hsize_t n = length(ds.id);
  if (n == 0) return 0;
  Handle file_space{H5Dget_space(ds.id), H5Sclose};
  hsize_t start = n - 1, one = 1;
  H5Sselect_hyperslab(file_space.id, H5S_SELECT_SET, &start, nullptr, &one, nullptr);
  Handle mem_space{H5Screate_simple(1, &one, nullptr), H5Sclose};
  int64_t v = 0;
  check(H5Dread(ds.id, H5T_NATIVE_INT64, mem_space.id, file_space.id, H5P_DEFAULT, &v), "reading " + name, path);
  return v;
}

void append_text(hid_t group, const std::string& name, const std::vector<std::string>& texts, const std::string& path) {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> offsets;
  int64_t base = last_offset(group, name + "_offsets", path);
  for (const std::string& t : texts) {
    bytes.insert(bytes.end(), t.begin(), t.end());
    base += static_cast<int64_t>(t.size());
    offsets.push_back(base);
  }
  append_values(group, name, H5T_NATIVE_UINT8, bytes, path);
  append_values(group, name + "_offsets", H5T_NATIVE_INT64, offsets, path);
}

}  // namespace

uint64_t source_hash(const std::string& source) { return fnv1a64(source); }

RolloutLog::RolloutLog(std::string path) : path_(std::move(path)) {
  if (!fs::exists(path_)) {
    create_file(path_);
    return;
  }
  Handle file{open_file(path_), H5Fclose};
  if (file.id < 0) return;  // torn: truncate() / append() report or replace it
  if (H5Aexists(file.id, "format") <= 0)
    throw Error("rollouts.h5: " + path_ + " is not a spade rollouts file (no format attribute); move it away");
  const std::string format = get_string_attr(file.id, "format");
  if (format != kFormat)
    throw Error("rollouts.h5: " + path_ + " has format '" + format + "', this spade writes '" + kFormat +
                "' (another layout, or env_source_hash values that differ); resume the run with the spade that "
                "wrote it, or move the file away to start a new one");
}

void RolloutLog::append(const std::vector<EpisodeRow>& episodes, const std::vector<EnvironmentRow>& environments) {
  if (episodes.empty() && environments.empty()) return;
  Handle file{check_id(open_file(path_), "opening", path_), H5Fclose};
  {
    Handle g{check_id(H5Gopen2(file.id, "episodes", H5P_DEFAULT), "opening /episodes", path_), H5Gclose};
    const int64_t first_id = static_cast<int64_t>([&] {
      Handle ds{H5Dopen2(g.id, "id", H5P_DEFAULT), H5Dclose};
      return length(ds.id);
    }());
    std::vector<int64_t> id, step, rollout_id, tok_off;
    std::vector<uint8_t> role, hinted, trained, term, trunc, mask, kinds;
    std::vector<double> rewards, adv;
    std::vector<int32_t> turns, tokens;
    std::vector<uint64_t> hash;
    std::vector<float> logp;
    std::vector<std::string> env_ids, skills;
    int64_t base = last_offset(g.id, "tokens_offsets", path_);
    for (size_t i = 0; i < episodes.size(); ++i) {
      const EpisodeRow& r = episodes[i];
      const rollout::Sample& s = *r.sample;
      id.push_back(first_id + static_cast<int64_t>(i));
      step.push_back(r.step);
      rollout_id.push_back(s.rollout_id);
      role.push_back(static_cast<uint8_t>(s.role));
      hinted.push_back(r.hinted);
      trained.push_back(r.trained);
      rewards.push_back(s.reward);
      adv.push_back(r.trained ? s.advantage : 0.0);
      term.push_back(r.terminated);
      trunc.push_back(r.truncated);
      turns.push_back(r.turns);
      hash.push_back(r.env_source_hash);
      const size_t first_kind = kinds.size();
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        tokens.push_back(static_cast<int32_t>(s.tokens[t]));
        mask.push_back(s.loss_mask[t] > 0 ? 1 : 0);
        logp.push_back(s.rollout_logprobs[t]);
        kinds.push_back(mask.back());
      }
      for (const rollout::ToolSegment& seg : s.tool_segments)
        for (int64_t t = seg.begin; t < seg.end && t < static_cast<int64_t>(s.tokens.size()); ++t)
          if (seg.kind == rollout::ToolSegment::Kind::kResult) kinds[first_kind + t] = 3;
          else if (kinds[first_kind + t] == 1) kinds[first_kind + t] = 2;
      base += static_cast<int64_t>(s.tokens.size());
      tok_off.push_back(base);
      env_ids.push_back(s.env_id);
      skills.push_back(s.skill);
    }
    append_values(g.id, "id", H5T_NATIVE_INT64, id, path_);
    append_values(g.id, "step", H5T_NATIVE_INT64, step, path_);
    append_values(g.id, "rollout_id", H5T_NATIVE_INT64, rollout_id, path_);
    append_values(g.id, "role", H5T_NATIVE_UINT8, role, path_);
    append_values(g.id, "hinted", H5T_NATIVE_UINT8, hinted, path_);
    append_values(g.id, "trained", H5T_NATIVE_UINT8, trained, path_);
    append_values(g.id, "rewards", H5T_NATIVE_DOUBLE, rewards, path_);
    append_values(g.id, "advantages", H5T_NATIVE_DOUBLE, adv, path_);
    append_values(g.id, "terminations", H5T_NATIVE_UINT8, term, path_);
    append_values(g.id, "truncations", H5T_NATIVE_UINT8, trunc, path_);
    append_values(g.id, "total_steps", H5T_NATIVE_INT32, turns, path_);
    append_values(g.id, "env_source_hash", H5T_NATIVE_UINT64, hash, path_);
    append_values(g.id, "tokens", H5T_NATIVE_INT32, tokens, path_);
    append_values(g.id, "loss_mask", H5T_NATIVE_UINT8, mask, path_);
    append_values(g.id, "rollout_logprobs", H5T_NATIVE_FLOAT, logp, path_);
    append_values(g.id, "token_kinds", H5T_NATIVE_UINT8, kinds, path_);
    append_values(g.id, "tokens_offsets", H5T_NATIVE_INT64, tok_off, path_);
    append_text(g.id, "env_id", env_ids, path_);
    append_text(g.id, "skill", skills, path_);
    set_int_attr(file.id, "total_episodes", first_id + static_cast<int64_t>(episodes.size()));
  }
  if (!environments.empty()) {
    Handle g{check_id(H5Gopen2(file.id, "environments", H5P_DEFAULT), "opening /environments", path_), H5Gclose};
    std::vector<int64_t> born, closed, window_plays;
    std::vector<uint8_t> from_seed;
    std::vector<uint64_t> hash;
    std::vector<double> win_rate, regret;
    std::vector<std::string> ids, skills, sources, hints;
    for (const EnvironmentRow& e : environments) {
      born.push_back(e.born);
      closed.push_back(e.closed);
      window_plays.push_back(e.window_plays);
      win_rate.push_back(e.win_rate);
      regret.push_back(e.regret);
      from_seed.push_back(e.from_seed);
      hash.push_back(source_hash(e.source));
      ids.push_back(e.id);
      skills.push_back(e.skill);
      sources.push_back(e.source);
      hints.push_back(e.hint);
    }
    append_values(g.id, "born", H5T_NATIVE_INT64, born, path_);
    append_values(g.id, "closed", H5T_NATIVE_INT64, closed, path_);
    append_values(g.id, "from_seed", H5T_NATIVE_UINT8, from_seed, path_);
    append_values(g.id, "source_hash", H5T_NATIVE_UINT64, hash, path_);
    append_values(g.id, "window_plays", H5T_NATIVE_INT64, window_plays, path_);
    append_values(g.id, "win_rate", H5T_NATIVE_DOUBLE, win_rate, path_);
    append_values(g.id, "regret", H5T_NATIVE_DOUBLE, regret, path_);
    append_text(g.id, "id", ids, path_);
    append_text(g.id, "skill", skills, path_);
    append_text(g.id, "source", sources, path_);
    append_text(g.id, "hint", hints, path_);
  }
  check(H5Fflush(file.id, H5F_SCOPE_GLOBAL), "flushing", path_);
}

bool RolloutLog::truncate(int64_t first_step) {
  {
    Handle file{open_file(path_), H5Fclose};
    if (file.id >= 0) {
      auto cut = [&](const char* group, const char* key, const std::vector<Column>& scalars,
                     const std::vector<Ragged>& ragged) {
        Handle g{check_id(H5Gopen2(file.id, group, H5P_DEFAULT), std::string("opening /") + group, path_), H5Gclose};
        const std::vector<int64_t> steps = read_i64(g.id, key, path_);
        hsize_t keep = 0;
        while (keep < steps.size() && steps[keep] < first_step) ++keep;
        for (const Column& c : scalars) resize(g.id, c.name, keep, path_);
        for (const Ragged& r : ragged) {
          const std::vector<int64_t> off = read_i64(g.id, r.offsets, path_);
          const int64_t end = keep < off.size() ? off[keep] : (off.empty() ? 0 : off.back());
          resize(g.id, r.name, static_cast<hsize_t>(end), path_);
        }
        for (const Ragged& r : ragged) resize(g.id, r.offsets, keep + 1, path_);
        return keep;
      };
      const hsize_t kept = cut("episodes", "step", episode_scalars(), episode_ragged());
      cut("environments", "closed", env_scalars(), env_ragged());
      set_int_attr(file.id, "total_episodes", static_cast<int64_t>(kept));
      return true;
    }
  }
  std::error_code ec;
  fs::rename(path_, path_ + ".corrupt", ec);
  create_file(path_);
  return false;
}

int64_t RolloutLog::num_episodes() const {
  Handle file{check_id(open_file(path_), "opening", path_), H5Fclose};
  Handle ds{check_id(H5Dopen2(file.id, "episodes/id", H5P_DEFAULT), "opening /episodes/id", path_), H5Dclose};
  return static_cast<int64_t>(length(ds.id));
}

}  // namespace spade::trainer
