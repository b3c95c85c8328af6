include(GoogleTest)

# ct_test(NAME SOURCES... LIBS... [LABELS...]): one GoogleTest binary, its tests registered
# with CTest. Label "tsan" marks the tests the ThreadSanitizer build runs (rings, flusher,
# concurrency); the AddressSanitizer build runs everything it builds.
function(ct_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  # gtest_discover_tests keeps only the first element of a list-valued property (CMake
  # issue 17812, escaped or not); ctest adds up repeated LABELS, so each label goes alone.
  set(label_properties "")
  foreach(label IN LISTS T_LABELS)
    list(APPEND label_properties LABELS ${label})
  endforeach()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${label_properties})
endfunction()
