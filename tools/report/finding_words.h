// A finding in words (analyses/findings.h decides it): the sentence Report::findings holds
// and `finding_details` repeats beside the figures it prints.
#pragma once

#include <string>

#include "tools/report/analyses/findings.h"

namespace commtrace::report {

std::string findingWords(const Finding& finding);

}  // namespace commtrace::report
