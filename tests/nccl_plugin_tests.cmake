# The NCCL profiler-plugin face, in-process through its exported tables.
ct_test(plugin_test SOURCES plugin_test.cc LIBS ct_nccl_plugin ct_ringbuffer)

# The real libnccl.so.2 of the CUDA toolkit, if there is one (see real_nccl_test.cc).
find_package(CUDAToolkit QUIET)
find_library(REAL_NCCL_LIBRARY NAMES libnccl.so.2 nccl
             HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib /usr/local/cuda/lib64 /usr/local/cuda/lib)
if(REAL_NCCL_LIBRARY AND NOT COMMTRACE_SANITIZE)
  ct_test(real_nccl_test SOURCES real_nccl_test.cc LIBS ${CMAKE_DL_LIBS})
  target_compile_definitions(real_nccl_test PRIVATE COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>"
                                                    REAL_NCCL_PATH="${REAL_NCCL_LIBRARY}")
  add_dependencies(real_nccl_test commtrace_so)
endif()

# Loading the built libcommtrace.so as NCCL does. Preloading it into a sanitizer build
# would put it ahead of the sanitizer runtime, so plain builds only.
if(NOT COMMTRACE_SANITIZE)
  ct_test(plugin_loading_test SOURCES plugin_loading_test.cc LIBS ct_sink_reader ${CMAKE_DL_LIBS})
  target_compile_definitions(plugin_loading_test PRIVATE COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>")
  add_dependencies(plugin_loading_test commtrace_so)
endif()

# The plugin end to end under the NCCL driver, per ABI version (tools are not built in
# sanitizer builds).
if(TARGET commtrace_nccl_driver)
  ct_test(driver_plugin_e2e_test SOURCES driver_plugin_e2e_test.cc
          LIBS ct_sink_reader nlohmann_json::nlohmann_json LABELS driver)
  target_compile_definitions(driver_plugin_e2e_test PRIVATE
    NCCL_DRIVER_PATH="$<TARGET_FILE:commtrace_nccl_driver>"
    COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>"
    DEMO_SCENARIO_PATH="${CMAKE_SOURCE_DIR}/tools/nccl-driver/scenarios/demo.json")
  add_dependencies(driver_plugin_e2e_test commtrace_nccl_driver commtrace_so)
endif()
