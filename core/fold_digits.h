// Each run of decimal digits in a name as one '#' ("train_step 12" is "train_step #",
// "layers.17.mlp" is "layers.#.mlp"): the occurrences of a numbered range as one key, for
// the NVTX face's paths and the report's steps alike.
#pragma once

#include <cstddef>
#include <string_view>

namespace commtrace {

// Writes the folded text to out, which must hold text.size() chars (it is never longer), and
// returns its length. No allocation: the NVTX face folds on its push.
inline size_t foldDigitRuns(std::string_view text, char* out) {
  size_t n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') out[n++] = c;
    else if (n == 0 || out[n - 1] != '#') out[n++] = '#';
  }
  return n;
}

}  // namespace commtrace
