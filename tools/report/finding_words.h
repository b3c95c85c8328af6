// A finding in words (analyses/findings.h decides it): the sentence Report::findings holds
// and `finding_details` repeats beside the figures it prints.
#pragma once

#include <string>

#include "tools/report/analyses/findings.h"

namespace commtrace::report {

std::string findingWords(const Finding& finding);
// What a mismatch row's figures say, in one sentence: "recorded by the others but not by
// these ranks, which recorded later ops (op index 41); their processes dropped ...".
std::string mismatchDetail(const MismatchRow& row);

}  // namespace commtrace::report
