# The preload face's process life (constructor and settings, job identity, fork, exit
# paths, signals, real programs) in child processes under LD_PRELOAD=libcommtrace.so.
# Preloading the library ahead of a sanitizer runtime does not work, so plain builds only.
if(NOT COMMTRACE_SANITIZE)
  # Records through the preloaded plugin face, then leaves the way its arguments say.
  add_executable(preload_life_program programs/preload_life_program.cc)
  target_link_libraries(preload_life_program PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)

  # Real programs the tests run with and without the preload. Absent ones skip their tests.
  find_program(CT_PYTHON3 NAMES python3)
  find_program(CT_MAKE NAMES make gmake)
  find_program(CT_BASH NAMES bash REQUIRED)
  find_program(CT_LS NAMES ls REQUIRED)
  foreach(tool CT_PYTHON3 CT_MAKE)
    if(NOT ${tool})
      set(${tool} "")
    endif()
  endforeach()

  ct_test(preload_process_test SOURCES preload_process_test.cc LIBS ct_sink_reader LABELS preload)
  target_compile_definitions(preload_process_test PRIVATE
    COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>"
    LIFE_PROGRAM_PATH="$<TARGET_FILE:preload_life_program>"
    PROGRAMS_DIR="${CMAKE_CURRENT_SOURCE_DIR}/programs"
    PYTHON3_PATH="${CT_PYTHON3}"
    MAKE_PATH="${CT_MAKE}"
    BASH_PATH="${CT_BASH}"
    LS_PATH="${CT_LS}"
    FAKE_NCCL_PATH="$<TARGET_FILE:fake_nccl>")
  add_dependencies(preload_process_test commtrace_so preload_life_program fake_nccl)
endif()

# The recorder's side of those mechanisms, in-process, in every build: the bounded flush
# that exit paths and signal handlers ask for, and a forked child forgetting its parent's
# recorder.
ct_test(flusher_exit_paths_test SOURCES flusher_exit_paths_test.cc
        LIBS ct_sink_writer ct_sink_reader LABELS tsan)
