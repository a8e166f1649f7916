// Baseline: a translation unit that only includes Boost.Hana.
#include <boost/hana.hpp>

int main() {}
