# Tests of the sink: file format round trips, conformance with commtrace.proto, damaged and
# foreign files, crashes, sink failures and the dump command. Label "tsan" marks the ones
# that run the flusher thread, "sink" the others (ct_test passes one label through).

ct_test(roundtrip_test SOURCES roundtrip_test.cc
        LIBS ct_sink_writer ct_sink_reader ct_synthetic LABELS tsan)

ct_test(proto_conformance_test SOURCES proto_conformance_test.cc
        LIBS ct_sink_writer ct_sink_reader LABELS sink)
target_compile_definitions(proto_conformance_test PRIVATE
  COMMTRACE_PROTO_PATH="${CMAKE_SOURCE_DIR}/sink/commtrace.proto")

ct_test(reader_corruption_test SOURCES reader_corruption_test.cc
        LIBS ct_sink_writer ct_sink_reader LABELS sink)

# The reader's fuzz target. Every build runs it over a fixed set of damaged files
# (reader_fuzz_replay); a Clang build also makes the libFuzzer binary, with the reader's
# sources compiled again under coverage instrumentation, and a short fuzzing run as a test.
ct_test(reader_fuzz_replay SOURCES reader_fuzz.cc reader_fuzz_replay.cc
        LIBS ct_sink_writer ct_sink_reader LABELS sink)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND NOT COMMTRACE_SANITIZE STREQUAL "thread")
  set(CT_FUZZ_SOURCES reader_fuzz.cc)
  foreach(lib ct_sink_format ct_sink_reader)
    get_target_property(lib_dir ${lib} SOURCE_DIR)
    get_target_property(lib_sources ${lib} SOURCES)
    foreach(src IN LISTS lib_sources)
      cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY ${lib_dir})
      list(APPEND CT_FUZZ_SOURCES ${src})
    endforeach()
  endforeach()
  add_executable(reader_fuzz ${CT_FUZZ_SOURCES})
  target_compile_options(reader_fuzz PRIVATE -fsanitize=fuzzer)
  target_link_options(reader_fuzz PRIVATE -fsanitize=fuzzer)
  if(NOT COMMTRACE_SANITIZE)
    target_compile_options(reader_fuzz PRIVATE -fsanitize=address,undefined)
    target_link_options(reader_fuzz PRIVATE -fsanitize=address,undefined)
  endif()
  target_link_libraries(reader_fuzz PRIVATE ct_trace_proto ct_ringbuffer)
  set(CT_FUZZ_CORPUS ${CMAKE_CURRENT_BINARY_DIR}/reader_fuzz_corpus)
  add_test(NAME reader_fuzz_corpus COMMAND reader_fuzz_replay --gtest_filter=ReaderFuzzReplay.WriteCorpus)
  set_tests_properties(reader_fuzz_corpus PROPERTIES
    ENVIRONMENT COMMTRACE_FUZZ_CORPUS=${CT_FUZZ_CORPUS} FIXTURES_SETUP reader_fuzz_corpus LABELS "sink;fuzz")
  add_test(NAME reader_fuzz_smoke COMMAND reader_fuzz -runs=10000 -seed=1 -max_len=16384 ${CT_FUZZ_CORPUS})
  set_tests_properties(reader_fuzz_smoke PROPERTIES FIXTURES_REQUIRED reader_fuzz_corpus LABELS "sink;fuzz")
endif()

ct_test(crash_test SOURCES crash_test.cc
        LIBS ct_sink_writer ct_sink_reader LABELS tsan)

ct_test(sink_failure_test SOURCES sink_failure_test.cc
        LIBS ct_sink_writer ct_sink_reader LABELS tsan)

# The command line tool is not built in sanitizer builds.
if(TARGET commtrace_cli)
  ct_test(dump_cli_test SOURCES dump_cli_test.cc
          LIBS ct_sink_writer ct_sink_reader nlohmann_json::nlohmann_json LABELS sink)
  target_compile_definitions(dump_cli_test PRIVATE COMMTRACE_CLI="$<TARGET_FILE:commtrace_cli>")
  add_dependencies(dump_cli_test commtrace_cli)
endif()
