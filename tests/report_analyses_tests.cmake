# The report's analyses (tools/report/analyses/) on hand-built runs, and end to end against
# the NCCL driver's planted ground truth.
ct_test(bandwidth_test SOURCES bandwidth_test.cc LIBS ct_report_analyses)
ct_test(p2p_calls_test SOURCES p2p_calls_test.cc LIBS ct_report_analyses)
ct_test(comm_matrix_test SOURCES comm_matrix_test.cc LIBS ct_report_analyses)
ct_test(stragglers_test SOURCES stragglers_test.cc LIBS ct_report_analyses)
ct_test(mismatches_test SOURCES mismatches_test.cc LIBS ct_report_analyses)
ct_test(cuda_sync_test SOURCES cuda_sync_test.cc LIBS ct_report_analyses)

# End to end: the NCCL driver plays the demo job (and variants) through libcommtrace.so;
# the analyses must find what it planted (tools are not built in sanitizer builds).
if(TARGET commtrace_nccl_driver)
  ct_test(report_ground_truth_test SOURCES report_ground_truth_test.cc
          LIBS ct_report_analyses nlohmann_json::nlohmann_json LABELS driver)
  target_compile_definitions(report_ground_truth_test PRIVATE
    NCCL_DRIVER_PATH="$<TARGET_FILE:commtrace_nccl_driver>"
    COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>"
    DEMO_SCENARIO_PATH="${CMAKE_SOURCE_DIR}/tools/nccl-driver/scenarios/demo.json")
  add_dependencies(report_ground_truth_test commtrace_nccl_driver commtrace_so)
endif()
