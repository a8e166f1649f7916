#pragma once
// overlap-plan: the inverse of the reader (bridge.hpp): the Bridge overrides that take a config
// from one settings value to another, each at the place the config reads the field from; and the
// config as the source judging asks about (plan/judge.hpp).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <overlap/plan/judge.hpp>
#include <overlap/settings/settings.hpp>

#include "bridge.hpp"

namespace overlap_plan {

/// The Bridge overrides that take the config `c` (read from `doc`) from settings `from` to `to`:
/// one per settings field that differs, Hydra's `a.b=v` where the config holds a.b and `++a.b=v`
/// (set or add) where it does not; a userbuffer config per slot field, over TE-6's defaults of
/// the slot's method.
std::vector<std::string> overrides_between(const bridge_config& c, const document& doc, const ov::settings& from,
                                           const ov::settings& to);

/// A read config as judging asks about it: its places, its defaults, its overrides.
class bridge_source final : public ov::plan::config_source {
 public:
  bridge_source(const bridge_config& c, const document& doc) : config_(c), doc_(doc) {}
  std::optional<std::string> written_at(std::string_view field) const override;
  bool holds_upstream_default(std::string_view field) const override;
  std::vector<std::string> changes_between(const ov::settings& from, const ov::settings& to) const override {
    return overrides_between(config_, doc_, from, to);
  }

 private:
  const bridge_config& config_;
  const document& doc_;
};

}  // namespace overlap_plan
