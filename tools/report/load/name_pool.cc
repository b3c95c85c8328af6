#include "tools/report/load/run_model.h"

namespace commtrace::report {

NamePool::NamePool() {
  names_.emplace_back();
  for (const nccl::FuncInfo& f : nccl::kFuncs) intern(f.name);
}

NameId NamePool::intern(std::string_view s) {
  if (s.empty()) return 0;
  const auto [it, inserted] = index_.try_emplace(std::string(s), static_cast<NameId>(names_.size()));
  if (inserted) names_.emplace_back(s);
  return it->second;
}

NameId NamePool::find(std::string_view s) const {
  if (s.empty()) return 0;
  const auto it = index_.find(std::string(s));
  return it == index_.end() ? 0 : it->second;
}

}  // namespace commtrace::report
