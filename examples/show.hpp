#pragma once
// Shared by the examples: prints a valid config's resolved settings, environment and notes.

#include <iostream>
#include <string_view>

#include <overlap/overlap.hpp>
#include <overlap/settings/print.hpp>

template <class Cfg>
void show(std::string_view title) {
  std::cout << "== " << title << " ==\n";
  overlap::write_resolved(std::cout, Cfg::resolved);
  std::cout << "-- environment --\n";
  overlap::write_environment(std::cout, Cfg::resolved);
  std::cout << "-- notes --\n";
  if (Cfg::notes.empty()) std::cout << "(none)\n";
  for (const auto& note : Cfg::notes) std::cout << note << '\n';
}
