// How a NameId travels in a shard's state (tools/report/shard/): each shard interns names in
// the order its loader threads met them, so the same name has different ids in different
// shards. A state is written with its shard's pool; an id is written as it is and read back
// as the id its name has in the pool the state is merged into (StateIn::remap). The
// analyses' serialize() functions mark their NameId fields with archived().
#pragma once

#include <cereal/archives/portable_binary.hpp>
#include <cereal/cereal.hpp>
#include <istream>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::report {

// A shard's ids as ids of the pool being merged into: to_pool[shard id].
struct NameRemap {
  std::vector<NameId> to_pool;
};

// The archives of a shard's state: its bytes in one order on every machine; read with the
// remap of the names written before what uses them.
using StateOut = cereal::PortableBinaryOutputArchive;
class StateIn : public cereal::PortableBinaryInputArchive {
 public:
  explicit StateIn(std::istream& in) : PortableBinaryInputArchive(in) {}
  NameRemap remap;
};

class ArchivedName {
 public:
  explicit ArchivedName(NameId& id) : id_(id) {}
  template <class Archive>
  void save(Archive& ar) const {
    ar(id_);
  }
  template <class Archive>
  void load(Archive& ar) {
    NameId id = 0;
    ar(id);
    // cereal hands on the archive as its base class; a state is read by a StateIn.
    const auto* state = dynamic_cast<const StateIn*>(&ar);
    if (state == nullptr) throw cereal::Exception("names read without their remap");
    if (id >= state->remap.to_pool.size()) throw cereal::Exception("a name id past the state's names");
    id_ = state->remap.to_pool[id];
  }

 private:
  NameId& id_;
};

inline ArchivedName archived(NameId& id) { return ArchivedName(id); }

// A map whose keys or values hold NameIds, entry by entry, so that each is remapped (a
// remapped key can change the map's order): archive_entry(ar, key, value) archives one.
template <class Archive, class Map, class ArchiveEntry>
void archiveEntries(Archive& ar, Map& map, ArchiveEntry archive_entry) {
  cereal::size_type n = map.size();
  ar(cereal::make_size_tag(n));
  if constexpr (Archive::is_loading::value) {
    map.clear();
    for (cereal::size_type i = 0; i < n; ++i) {
      typename Map::key_type key{};
      typename Map::mapped_type value{};
      archive_entry(ar, key, value);
      map.emplace(std::move(key), std::move(value));
    }
  } else {
    for (auto& [k, v] : map) {
      typename Map::key_type key = k;
      archive_entry(ar, key, v);
    }
  }
}

}  // namespace commtrace::report
