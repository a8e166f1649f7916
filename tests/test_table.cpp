// Keeps the rule table (rules/table.inc), its tests and docs/rules.md in step: walks the table and fails
// when a rule lacks its test or the generated documentation is stale.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <overlap/rules/document.hpp>
#include <overlap/rules/rule.hpp>

namespace fs = std::filesystem;
namespace rules = overlap::rules;

namespace {
const fs::path source_dir{OVERLAP_SOURCE_DIR};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int count(rules::kind k) {
  int n = 0;
  for (const rules::rule& x : rules::table) n += x.kind == k;
  return n;
}
}  // namespace

TEST_CASE("the table has the catalogue's rules, each id once") {
  std::set<std::string_view> ids;
  for (const rules::rule& x : rules::table) CHECK(ids.insert(x.id).second);
  CHECK(count(rules::kind::option_error) + count(rules::kind::error) == 62);
  CHECK(count(rules::kind::derivation) == 13);
  CHECK(count(rules::kind::note) == 4);
  CHECK(count(rules::kind::not_applicable) == 3);
  CHECK(count(rules::kind::remark) == 3);
}

TEST_CASE("every E rule has a compile-fail file with its control") {
  for (const rules::rule& x : rules::table) {
    if (!rules::is_error(x.kind)) continue;
    CAPTURE(x.id);
    const fs::path file = source_dir / "tests" / "compile_fail" / (std::string(x.id) + ".cpp");
    REQUIRE(fs::exists(file));
    const std::string text = read(file);
    CHECK(text.find("// EXPECT: [" + std::string(x.id) + "]") != std::string::npos);
    CHECK(text.find("OVERLAP_CONTROL") != std::string::npos);
  }
}

TEST_CASE("every D and N rule has a value test named after it") {
  std::string tests;
  for (const auto& entry : fs::directory_iterator(source_dir / "tests"))
    if (entry.path().extension() == ".cpp") tests += read(entry.path());
  for (const rules::rule& x : rules::table) {
    if (x.kind != rules::kind::derivation && x.kind != rules::kind::note) continue;
    CAPTURE(x.id);
    CHECK(tests.find("TEST_CASE(\"[" + std::string(x.id) + "] ") != std::string::npos);
  }
}

TEST_CASE("docs/rules.md is the table's current documentation") {
  std::ostringstream generated;
  rules::write_rule_document(generated);
  const bool fresh = generated.str() == read(source_dir / "docs" / "rules.md");
  INFO("regenerate with: cmake --build <build dir> --target rule_doc");
  CHECK(fresh);
}

TEST_CASE("the README's quick start is examples/quick_start.cpp") {
  const std::string example = read(source_dir / "examples" / "quick_start.cpp");
  const auto begin = example.find("namespace ov = overlap;");
  const auto end = example.find("int main(");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string block = example.substr(begin, end - begin);
  CHECK(read(source_dir / "README.md").find(block.substr(0, block.find_last_not_of('\n') + 1)) != std::string::npos);
}
