# Tests of ringbuffer/ (rings, registry, string table), of rings and flusher under
# concurrency, and of what libcommtrace.so links and exports.

ct_test(ring_test SOURCES ring_test.cc LIBS ct_ringbuffer LABELS tsan)
ct_test(string_table_test SOURCES string_table_test.cc LIBS ct_ringbuffer LABELS tsan)
ct_test(ring_registry_test SOURCES ring_registry_test.cc LIBS ct_ringbuffer LABELS tsan)

# COMMTRACE_TEST_RECORDS_PER_PRODUCER (default 1000000) sets the load per producer thread.
ct_test(concurrency_test SOURCES concurrency_test.cc
        LIBS ct_sink_writer ct_sink_reader LABELS tsan)

ct_test(library_test SOURCES library_test.cc LIBS ct_sink_reader ${CMAKE_DL_LIBS})
target_compile_definitions(library_test PRIVATE COMMTRACE_SO_PATH="$<TARGET_FILE:commtrace_so>")
add_dependencies(library_test commtrace_so)
