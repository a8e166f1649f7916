#include "sweep_check.hpp"

TEST_CASE("check<...>() and validate() agree on sweep configurations 1000-1999") { sweep::run_part<1000, 1000>(); }
