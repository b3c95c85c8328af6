# Tests of the NCCL driver (tools/nccl-driver/): scenarios, the timing model, loading and
# binding a plugin as NCCL does, and what a plugin receives, per version and per thread.
# They drive tests/fake_profiler_plugin.cc, built with different exports; label "tsan"
# because the player calls the plugin from three threads.

set(CT_FAKE_PLUGIN_DIR ${CMAKE_CURRENT_BINARY_DIR}/fake-plugins)
# ct_fake_plugin(TARGET FILE_NAME PLUGIN_NAME EXPORT_DEFINITIONS...)
function(ct_fake_plugin target file_name plugin_name)
  add_library(${target} MODULE fake_profiler_plugin.cc)
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${file_name} LIBRARY_OUTPUT_DIRECTORY ${CT_FAKE_PLUGIN_DIR})
  target_compile_definitions(${target} PRIVATE FAKE_NAME="${plugin_name}" ${ARGN})
endfunction()
ct_fake_plugin(fake_profiler_all libfake-profiler-all "fake-all" FAKE_EXPORT_V4 FAKE_EXPORT_V5 FAKE_EXPORT_V6 FAKE_EXPORT_V7)
ct_fake_plugin(fake_profiler_v4v5 libfake-profiler-v4v5 "fake-v4v5" FAKE_EXPORT_V4 FAKE_EXPORT_V5)
ct_fake_plugin(fake_profiler_none libfake-profiler-none "fake-none")
# Found by NCCL_PROFILER_PLUGIN=fake through the libnccl-profiler-<name>.so expansion.
ct_fake_plugin(fake_profiler_named libnccl-profiler-fake "fake-named" FAKE_EXPORT_V4 FAKE_EXPORT_V5 FAKE_EXPORT_V6 FAKE_EXPORT_V7)
set(CT_FAKE_PLUGIN_DEFINITIONS
  FAKE_PLUGIN_ALL="$<TARGET_FILE:fake_profiler_all>"
  FAKE_PLUGIN_V4V5="$<TARGET_FILE:fake_profiler_v4v5>"
  FAKE_PLUGIN_NONE="$<TARGET_FILE:fake_profiler_none>"
  COMMTRACE_SCENARIO_DIR="${CMAKE_SOURCE_DIR}/tools/nccl-driver/scenarios")

ct_test(nccl_driver_test SOURCES nccl_driver_test.cc LIBS ct_nccl_driver LABELS tsan)
target_compile_definitions(nccl_driver_test PRIVATE ${CT_FAKE_PLUGIN_DEFINITIONS} FAKE_PLUGIN_DIR="${CT_FAKE_PLUGIN_DIR}")
add_dependencies(nccl_driver_test fake_profiler_all fake_profiler_v4v5 fake_profiler_none fake_profiler_named)

# The driver program and `commtrace demo` end to end (tools are not built in sanitizer builds).
if(TARGET commtrace_nccl_driver AND TARGET commtrace_cli)
  ct_test(nccl_driver_cli_test SOURCES nccl_driver_cli_test.cc LIBS ct_sink_reader nlohmann_json::nlohmann_json LABELS driver)
  target_compile_definitions(nccl_driver_cli_test PRIVATE ${CT_FAKE_PLUGIN_DEFINITIONS}
    COMMTRACE_DRIVER="$<TARGET_FILE:commtrace_nccl_driver>" COMMTRACE_CLI="$<TARGET_FILE:commtrace_cli>")
  add_dependencies(nccl_driver_cli_test commtrace_nccl_driver commtrace_cli commtrace_so fake_profiler_all)
endif()
