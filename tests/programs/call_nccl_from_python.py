# A training loop in Python whose communication goes through a C extension (loaded with
# ctypes: argv[1]), as PyTorch's does through its own: the report's stacks name the Python
# functions where the interpreter keeps a perf map (CPython 3.12+, PYTHONPERFSUPPORT=1).
import ctypes
import sys

nccl = ctypes.CDLL(sys.argv[1])


def all_reduce_gradients():
    if nccl.allReduceOnce() != 0:
        raise RuntimeError("allReduceOnce failed")


def train_step():
    all_reduce_gradients()


for _ in range(3):
    train_step()
print("done")
