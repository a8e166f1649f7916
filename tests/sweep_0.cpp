#include "sweep_check.hpp"

TEST_CASE("check<...>() and validate() agree on sweep configurations 0-999") { sweep::run_part<0, 1000>(); }
