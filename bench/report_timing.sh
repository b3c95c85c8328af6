# Sourced by the report benchmarks: reportTiming BUILD_DIR RUN_DIR runs
# `commtrace report RUN_DIR --format json` under /usr/bin/time -v and prints
# "WALL_S CPU_S PEAK_RSS_MB" (CPU: user + system, all threads).
reportTiming() {
  local build=$1 dir=$2 log
  log=$(mktemp)
  /usr/bin/time -v "$build/bin/commtrace" report "$dir" --format json --out /dev/null 2>"$log" >/dev/null || { cat "$log" >&2; rm -f "$log"; return 1; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ {n = split($2, t, ":"); wall = 0; for (i = 1; i <= n; ++i) wall = wall * 60 + t[i]}
    /(User|System) time \(seconds\)/ {cpu += $2}
    /Maximum resident set size/ {rss = int($2 / 1024)}
    END {print wall, cpu, rss}' "$log"
  rm -f "$log"
}
