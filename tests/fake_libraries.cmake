# Stand-ins for the libraries the preload face wraps, each in its own directory under its
# real soname, so a test puts it on LD_LIBRARY_PATH (or links it) and runs a program whose
# calls go through libcommtrace.so's wrappers.
add_library(fake_nccl SHARED fake_nccl.cc)
set_target_properties(fake_nccl PROPERTIES
  OUTPUT_NAME nccl VERSION 2.28.9 SOVERSION 2
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake-nccl)

# libcudart.so.13 with the runtime's symbol version, for the CUDA sync wrappers.
add_library(fake_cudart SHARED fake_cudart.cc)
set_target_properties(fake_cudart PROPERTIES
  OUTPUT_NAME cudart VERSION 13.0.96 SOVERSION 13
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake-cudart
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fake_cudart.map)
target_link_options(fake_cudart PRIVATE -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/fake_cudart.map)
