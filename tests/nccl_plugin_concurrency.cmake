# The NCCL profiler plugin called from NCCL's threads at once (user, host callback, proxy),
# with late, surplus and garbage events; the test drains the rings itself.
ct_test(plugin_concurrency_test SOURCES plugin_concurrency_test.cc LIBS ct_nccl_plugin ct_ringbuffer LABELS tsan)
