# The report's output (tools/report/output/) and the overlap analysis: writers on a
# hand-built Report, the Perfetto export and overlap on hand-built runs, and `commtrace
# report` / `commtrace export` as a user runs them.
ct_test(overlap_test SOURCES overlap_test.cc LIBS ct_report_analyses LABELS report)
ct_test(report_writers_test SOURCES text_report_test.cc json_report_test.cc csv_report_test.cc html_report_test.cc
        LIBS ct_report_output nlohmann_json::nlohmann_json LABELS report)
ct_test(perfetto_export_test SOURCES perfetto_export_test.cc LIBS ct_report_output nlohmann_json::nlohmann_json LABELS report)

# The command on runs `commtrace demo` plays through libcommtrace.so (tools are not built in
# sanitizer builds).
if(TARGET commtrace_cli)
  ct_test(report_cli_test SOURCES report_cli_test.cc LIBS nlohmann_json::nlohmann_json LABELS report driver)
  target_compile_definitions(report_cli_test PRIVATE COMMTRACE_CLI="$<TARGET_FILE:commtrace_cli>")
  add_dependencies(report_cli_test commtrace_cli commtrace_nccl_driver commtrace_so)
endif()
