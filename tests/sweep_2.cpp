#include "sweep_check.hpp"

TEST_CASE("check<...>() and validate() agree on sweep configurations 2000-2999") { sweep::run_part<2000, 1000>(); }
