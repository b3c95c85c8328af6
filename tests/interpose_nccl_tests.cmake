# The preload face's NCCL API wrappers (interpose/nccl_wrappers.cc and what they use).

# In-process: the communicator table, lookups racing creation on other threads.
ct_test(comm_registry_test SOURCES comm_registry_test.cc LIBS ct_interpose LABELS tsan)

# Child processes under LD_PRELOAD=libcommtrace.so: plain builds only (a sanitizer
# runtime would have to come first in the preload list).
if(NOT COMMTRACE_SANITIZE)
  # A program calling NCCL as applications do, linked against the fake libnccl.so.2.
  add_executable(nccl_wrappers_child nccl_wrappers_child.cc)
  target_link_libraries(nccl_wrappers_child PRIVATE fake_nccl ${CMAKE_DL_LIBS})

  ct_test(nccl_wrappers_test SOURCES nccl_wrappers_test.cc LIBS ct_sink_reader ct_interpose)
  target_compile_definitions(nccl_wrappers_test PRIVATE
    COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>"
    NCCL_WRAPPERS_CHILD_PATH="$<TARGET_FILE:nccl_wrappers_child>"
    FAKE_NCCL_DIR="$<TARGET_FILE_DIR:fake_nccl>")
  add_dependencies(nccl_wrappers_test commtrace_so nccl_wrappers_child)

  # The same program linked against the real libnccl.so.2 (found by nccl_plugin_tests.cmake):
  # its error paths through the wrappers.
  if(REAL_NCCL_LIBRARY)
    add_executable(real_nccl_child nccl_wrappers_child.cc)
    target_link_libraries(real_nccl_child PRIVATE ${REAL_NCCL_LIBRARY} ${CMAKE_DL_LIBS})
    ct_test(real_nccl_preload_test SOURCES real_nccl_preload_test.cc LIBS ct_sink_reader)
    target_compile_definitions(real_nccl_preload_test PRIVATE
      COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>"
      REAL_NCCL_CHILD_PATH="$<TARGET_FILE:real_nccl_child>")
    add_dependencies(real_nccl_preload_test commtrace_so real_nccl_child)
  endif()
endif()
