#pragma once
/// @file
/// The umbrella header: the typed configuration, its rule table and the run-time validator.
/// Host only (no CUDA). Printing lives in <overlap/settings/print.hpp> (it brings <ostream>).

#include <overlap/config/choices.hpp>
#include <overlap/config/config.hpp>
#include <overlap/config/flags.hpp>
#include <overlap/config/integers.hpp>
#include <overlap/config/sizes.hpp>
#include <overlap/config/ub.hpp>
#include <overlap/config/ub_presets.hpp>
#include <overlap/rules/derive.hpp>
#include <overlap/rules/report.hpp>
#include <overlap/rules/rule.hpp>
#include <overlap/rules/validate.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>
