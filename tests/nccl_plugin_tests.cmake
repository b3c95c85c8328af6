# The NCCL profiler-plugin face, in-process through its exported tables.
ct_test(plugin_test SOURCES plugin_test.cc LIBS ct_nccl_plugin ct_ringbuffer)
