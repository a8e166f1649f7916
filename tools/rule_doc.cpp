// Prints docs/rules.md from the rule table.
#include <iostream>

#include <overlap/rules/document.hpp>

int main() { overlap::rules::write_rule_document(std::cout); }
