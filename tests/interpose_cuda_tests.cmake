# The preload face's CUDA runtime wrappers, in child processes under
# LD_PRELOAD=libcommtrace.so against the fake libcudart.so.13. Preloading into a sanitizer
# build would put libcommtrace.so ahead of the sanitizer runtime, so plain builds only.
if(NOT COMMTRACE_SANITIZE)
  # The program the test runs: linked against the runtime, and a twin that finds it by name.
  add_executable(cuda_sync_caller cuda_sync_caller.cc)
  target_link_libraries(cuda_sync_caller PRIVATE fake_cudart)
  add_executable(cuda_sync_caller_dlsym cuda_sync_caller.cc)
  target_compile_definitions(cuda_sync_caller_dlsym PRIVATE CUDA_SYNC_CALLER_DLSYM)
  target_link_libraries(cuda_sync_caller_dlsym PRIVATE ${CMAKE_DL_LIBS})

  ct_test(cuda_wrappers_test SOURCES cuda_wrappers_test.cc LIBS ct_sink_reader ct_report_analyses)
  target_compile_definitions(cuda_wrappers_test PRIVATE
    COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>"
    FAKE_CUDART_DIR="$<TARGET_FILE_DIR:fake_cudart>"
    CUDA_SYNC_CALLER_PATH="$<TARGET_FILE:cuda_sync_caller>"
    CUDA_SYNC_CALLER_DLSYM_PATH="$<TARGET_FILE:cuda_sync_caller_dlsym>")
  add_dependencies(cuda_wrappers_test commtrace_so fake_cudart cuda_sync_caller cuda_sync_caller_dlsym)
endif()
