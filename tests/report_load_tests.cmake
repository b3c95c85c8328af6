# The report's loading half (tools/report/load/): reading a run directory into a RunModel,
# joining ops across ranks, clock alignment, the run summary; and the synthetic run writer
# the report benchmarks read. Label "tsan": the loader decodes files on several threads
# (and the run writer writes ranks on several), so those tests also run under TSan.

ct_test(run_loader_test SOURCES run_loader_test.cc LIBS ct_report_load ct_sink_writer LABELS report tsan)
ct_test(clock_align_test SOURCES clock_align_test.cc LIBS ct_report_load LABELS report)
ct_test(run_summary_test SOURCES run_summary_test.cc LIBS ct_report_load LABELS report)
ct_test(run_writer_test SOURCES run_writer_test.cc LIBS ct_report_load ct_synthetic_run LABELS report tsan)

# Against runs the NCCL driver plays through libcommtrace.so, checked with its ground truth
# (tools are not built in sanitizer builds).
if(TARGET commtrace_nccl_driver)
  ct_test(run_loader_driver_test SOURCES run_loader_driver_test.cc
          LIBS ct_report_load nlohmann_json::nlohmann_json LABELS driver)
  target_compile_definitions(run_loader_driver_test PRIVATE
    NCCL_DRIVER_PATH="$<TARGET_FILE:commtrace_nccl_driver>"
    COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>"
    DEMO_SCENARIO_PATH="${CMAKE_SOURCE_DIR}/tools/nccl-driver/scenarios/demo.json")
  add_dependencies(run_loader_driver_test commtrace_nccl_driver commtrace_so)
endif()
