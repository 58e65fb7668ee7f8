// Every op the dispatcher runs in a candidate's sandbox, whoever calls it: a global RecordFunction callback,
// installed by the harness before any candidate code and never removed. It sees the ops a C++ guard hides from a
// TorchDispatchMode, on every thread, in trials and in timed calls alike, at ~50 ns an op (the legacy profiler:
// ~1 us, too much for timed calls). The harness takes what it saw at the edges of each window it judges.
#include <ATen/record_function.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

namespace {
std::mutex seen_lock;
// Keyed by the name's pointer (a dispatcher op's name is its schema's, which lives as long as the op), but the name
// is copied when first seen: a RecordFunction whose name is a string of its own frees it when it ends, and reading
// that pointer later (at take) read whatever the memory held then (CI: an op named "aten::", a false torch-compute).
struct Seen {
  std::string name;
  int64_t count = 0;
};
auto* seen = new std::unordered_map<const char*, Seen>();  // never freed: callbacks may outlive statics
// counts of names whose pointer came to hold another name before the take
auto* retired = new std::unordered_map<std::string, int64_t>();
bool installed = false;

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
  const char* name = fn.name();
  std::lock_guard<std::mutex> guard(seen_lock);
  Seen& entry = (*seen)[name];
  if (entry.count == 0) {
    entry.name = name;
  } else if (entry.name != name) {  // the pointer was freed and now holds another name
    (*retired)[entry.name] += entry.count;
    entry.name = name;
    entry.count = 0;
  }
  ++entry.count;
  return nullptr;
}
}  // namespace

extern "C" {
// Installs the callback once; 1 when this call installed it.
int kd_watch_install() {
  std::lock_guard<std::mutex> guard(seen_lock);
  if (installed) return 0;
  at::addGlobalCallback(at::RecordFunctionCallback(on_op).scopes({at::RecordScope::FUNCTION}));
  installed = true;
  return 1;
}

// What was seen since the last take, as "name\tcount\n" lines in `buffer`, and forgotten. Returns the bytes the
// lines need; when more than `capacity`, nothing is written or forgotten (call again with a larger buffer).
int64_t kd_watch_take(char* buffer, int64_t capacity) {
  std::string lines;
  std::lock_guard<std::mutex> guard(seen_lock);
  std::unordered_map<std::string, int64_t> counts(*retired);
  for (const auto& entry : *seen) counts[entry.second.name] += entry.second.count;
  for (const auto& entry : counts) {
    lines += entry.first;
    lines += '\t';
    lines += std::to_string(entry.second);
    lines += '\n';
  }
  const int64_t needed = static_cast<int64_t>(lines.size());
  if (needed <= capacity) {
    std::memcpy(buffer, lines.data(), lines.size());
    seen->clear();
    retired->clear();
  }
  return needed;
}
}
