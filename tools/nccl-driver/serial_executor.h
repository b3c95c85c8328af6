// A named thread that runs posted jobs one at a time, in order: NCCL's proxy progress
// thread and the CUDA host-callback thread, as far as the profiler can tell.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace commtrace::driver {

class SerialExecutor {
 public:
  explicit SerialExecutor(std::string name);
  ~SerialExecutor();  // runs what is queued, then joins
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  void post(std::function<void()> job);
  // Returns once every job posted so far has run.
  void drain();

 private:
  void run();

  std::string name_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> jobs_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace commtrace::driver
