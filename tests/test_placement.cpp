// Ranks on NVLink domains: the default placement, an explicit one, and which groups straddle.
#include <doctest/doctest.h>

#include <overlap/sim/analysis/placement.hpp>
#include <overlap/sim/machine/blackwell.hpp>
#include <overlap/sim/machine/machine.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

TEST_CASE("a job fills the largest power-of-two block of a domain unless told otherwise") {
  CHECK(ov::sim::default_ranks_per_domain(72) == 64);
  CHECK(ov::sim::default_ranks_per_domain(36) == 32);
  CHECK(ov::sim::default_ranks_per_domain(8) == 8);
  CHECK(ov::sim::default_ranks_per_domain(1) == 1);
  CHECK(ov::sim::default_ranks_per_domain(0) == 0);
  const ov::sim::machine whole = ov::sim::with_placement(ov::sim::gb300_nvl72(), 72);
  CHECK(whole.gpus_per_node == 72);
  CHECK(whole.domain_gpus() == 72);
  const ov::sim::machine four = ov::sim::with_placement(ov::sim::h100_node(), 4);
  CHECK(four.gpus_per_node == 4);
  CHECK(four.domain_gpus() == 8);
  CHECK_THROWS_WITH_AS(ov::sim::with_placement(ov::sim::b200_node(), 16),
                       "placement: 16 GPUs per NVLink domain on b200, whose domain holds 8: give 1 to 8",
                       std::invalid_argument);
  CHECK_THROWS_AS(ov::sim::with_placement(ov::sim::gb200_nvl72(), 0), std::invalid_argument);
}

TEST_CASE("groups that straddle domains, counted by hand") {
  // Qwen3-235B's GB300 recipe: 256 ranks, pp4 (64 ranks a stage), ep32. Whole racks of 72: stage 1
  // is ranks 64..127, so its first ep group, 64..95, has 64..71 in rack 0 and 72..95 in rack 1;
  // stage 2's first (128..159) straddles 143/144, stage 3's first (192..223) 215/216: 3 of 8.
  const sc::layout L(1, 1, 64, 4, 32);
  const auto whole = ov::sim::straddling(L, 72);
  REQUIRE(whole.size() == 2);
  CHECK(whole[0].kind == "ep");
  CHECK(whole[0].groups == 8);
  CHECK(whole[0].straddling == 3);
  CHECK(whole[0].names == std::vector<std::string>{"ep.s1.g0", "ep.s2.g0", "ep.s3.g0"});
  CHECK(whole[1].kind == "pp");
  CHECK(whole[1].groups == 64);
  CHECK(whole[1].straddling == 64);  // every pipeline has stages in two racks
  // 64-GPU blocks: each stage is one block, no ep group straddles.
  const auto blocks = ov::sim::straddling(L, 64);
  CHECK(blocks[0].straddling == 0);
  CHECK(blocks[1].straddling == 64);
  // tp8 on nodes of 4: every tp group spans two; tp4 on nodes of 8: none.
  CHECK(ov::sim::straddling(sc::layout(8, 1, 2, 1, 1), 4).front().straddling == 2);
  CHECK(ov::sim::straddling(sc::layout(4, 1, 4, 1, 1), 8).front().straddling == 0);
  CHECK(ov::sim::straddling(sc::layout(1, 1, 16, 1, 1), 8).empty());  // dp alone: no group of a kind
}

TEST_CASE("the note names the groups, the link they fall back to and its rate") {
  const ov::sim::machine rack = ov::sim::with_placement(ov::sim::gb300_nvl72(), 72);
  const auto notes = ov::sim::placement_notes(sc::layout(1, 1, 64, 4, 32), rack);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] ==
        "3 of 8 ep groups of 32 (ep.s1.g0, ep.s2.g0, ep.s3.g0) span two or more domains (NVLink domains of 72 "
        "GPUs): their dispatch and combine all-to-alls run over the NIC at 96 GB/s a GPU against NVLink's 720 (7.5x "
        "slower); a group size that divides 72 keeps each group in one domain");
  CHECK(notes[1].starts_with("64 of 64 pipelines (pp.t0.d0, pp.t0.d1, pp.t0.d2, ...) have stages in different"));
  // The default placement keeps the ep groups whole: only the pipelines cross.
  CHECK(ov::sim::placement_notes(sc::layout(1, 1, 64, 4, 32), ov::sim::gb300_nvl72()).size() == 1);
  // One HGX node: nothing crosses.
  CHECK(ov::sim::placement_notes(sc::layout(2, 1, 2, 2, 4), ov::sim::b200_node()).empty());
}
