#include "sweep_check.hpp"

TEST_CASE("check<...>() and validate() agree on sweep configurations 3000-3999") { sweep::run_part<3000, 1000>(); }
