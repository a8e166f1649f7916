#include "sweep_check.hpp"

TEST_CASE("check<...>() and validate() agree on sweep configurations 4000-4999") { sweep::run_part<4000, 1000>(); }
