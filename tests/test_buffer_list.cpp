// An op's buffer list: a small vector that keeps up to four indices inside the op. Every
// operation is checked against std::vector over random sequences that cross the inline capacity
// both ways (copies, moves, self-assignment and growth included); ASan and UBSan builds run it too.
#include <doctest/doctest.h>

#include <random>
#include <utility>
#include <vector>

#include <overlap/program/buffer_list.hpp>

using overlap::schedule::buffer_list;

namespace {

bool same(const buffer_list& a, const std::vector<int>& b) {
  if (a.size() != b.size() || a.empty() != b.empty()) return false;
  for (std::size_t i = 0; i < b.size(); ++i)
    if (a[i] != b[i] || a.data()[i] != b[i]) return false;
  return std::vector<int>(a.begin(), a.end()) == b;
}

}  // namespace

TEST_CASE("a buffer list holds what a vector holds, inline or on the heap") {
  CHECK(same(buffer_list{}, {}));
  CHECK(same(buffer_list{3, 1, 4}, {3, 1, 4}));
  CHECK(same(buffer_list{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}));
  const std::vector<int> nine{9, 8, 7, 6, 5, 4, 3, 2, 1};
  CHECK(same(buffer_list(nine), nine));
  buffer_list b{7};
  b = {1, 2, 3, 4, 5};
  CHECK(same(b, {1, 2, 3, 4, 5}));
  b = {2};  // back to one, its heap block kept
  CHECK(same(b, {2}));
  CHECK(buffer_list{1, 2} == buffer_list{1, 2});
  CHECK_FALSE(buffer_list{1, 2} == buffer_list{1, 2, 3});
  CHECK_FALSE(buffer_list{1, 2, 3, 4, 5} == buffer_list{1, 2, 3, 4, 6});
}

TEST_CASE("a buffer list's copies, moves and growth match a vector's over random sequences") {
  std::mt19937 random(7);
  std::vector<buffer_list> lists(4);
  std::vector<std::vector<int>> model(4);
  for (int step = 0; step < 20000; ++step) {
    const std::size_t a = random() % 4, b = random() % 4;
    switch (random() % 8) {
      case 0:
      case 1:
      case 2: {
        const int v = static_cast<int>(random() % 100);
        lists[a].push_back(v);
        model[a].push_back(v);
        break;
      }
      case 3:  // copy-assign, self included
        lists[a] = lists[b];
        model[a] = model[b];
        break;
      case 4:  // move-assign, self included
        if (a != b) {
          lists[a] = std::move(lists[b]);
          model[a] = std::move(model[b]);
          model[b].clear();
          CHECK(lists[b].empty());
        }
        break;
      case 5: {  // move- and copy-construct
        buffer_list moved(std::move(lists[a]));
        CHECK(lists[a].empty());
        const buffer_list copied(moved);
        lists[a] = copied;
        CHECK(same(moved, model[a]));
        break;
      }
      case 6:
        if (random() % 4 == 0) {
          lists[a].clear();
          model[a].clear();
        }
        break;
      case 7:  // from a vector
        lists[a] = buffer_list(model[b]);
        model[a] = model[b];
        break;
    }
    for (std::size_t k = 0; k < 4; ++k) REQUIRE(same(lists[k], model[k]));
    if (model[a].size() > 40) {  // keep them crossing the inline capacity
      lists[a] = {1};
      model[a] = {1};
    }
  }
}
