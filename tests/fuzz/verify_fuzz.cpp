// libFuzzer target: bytes decode into a step of small, often malformed programs and a class map;
// verify() of the full step and of the step the programs stand for under the map must answer with
// findings, never an exception, a crash or undefined behaviour (ASan + UBSan), and each finding
// must describe. Under a map of every rank alone, with every rank of it present, the class
// verifier finds what the full one does. The structure check's quick test never passes an op
// that its rule-by-rule check finds a problem with (each program checked both ways).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <overlap/verify/verify.hpp>

#include "fuzz_input.hpp"

namespace {
/// Whether `structure_check::accepts` (quick test first) and `explain` (every rule) find the same
/// problems in `p`, op by op.
bool quick_test_agrees(const overlap::schedule::program& p) {
  overlap::schedule::structure_check quick(p), full(p);
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    if (quick.accepts(i) != full.explain(i)) return false;
  const auto& a = quick.problems();
  const auto& b = full.problems();
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].op != b[i].op || a[i].rule != b[i].rule || a[i].text != b[i].text) return false;
  return true;
}

bool same(const std::vector<overlap::verify::finding>& a, const std::vector<overlap::verify::finding>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].rank != b[i].rank || a[i].op != b[i].op || a[i].reason != b[i].reason) return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::byte_reader in(data, size);
  const auto step = fuzz::decode_step(in);
  const overlap::schedule::rank_classes classes = fuzz::decode_classes(in);
  try {
    for (const auto& p : step)
      if (!quick_test_agrees(p)) std::abort();
    const auto full = overlap::verify::verify(step);
    for (const auto& f : full)
      if (overlap::verify::describe(f, step).empty()) std::abort();
    for (const auto& f : overlap::verify::verify(step, classes))
      if (overlap::verify::describe(f, step).empty()) std::abort();
    // Every rank of the world alone and present: nothing is absent, nothing stood for.
    const auto alone = overlap::schedule::rank_classes::each_alone(static_cast<int>(step.size()));
    std::vector<char> present(step.size(), 0);
    bool all = true;
    for (const auto& p : step) {
      if (p.rank < 0 || p.rank >= alone.world() || present[static_cast<std::size_t>(p.rank)])
        all = false;
      else
        present[static_cast<std::size_t>(p.rank)] = 1;
    }
    bool members_in_world = true;  // else class_problems rightly names a member outside the map
    for (const auto& p : step)
      for (const auto& c : p.comms)
        for (const int m : c.ranks) members_in_world = members_in_world && m >= 0 && m < alone.world();
    if (all && members_in_world && !same(overlap::verify::verify(step, alone), full)) std::abort();
  } catch (...) {
    std::abort();
  }
  return 0;
}
