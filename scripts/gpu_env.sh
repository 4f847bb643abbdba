# Sourced by the scripts that run on a GPU machine (gpu_check.sh, nccl_profiler_gpu.sh,
# scripts/dev/three_tools_gpu.sh): NCCL and CUDA from that machine's Python environment, never NVLink multicast.
# nvidia.nccl is a namespace package there: its folder is __path__[0], not dirname(__file__).
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on shared GPUs
libdir() { python3 -c "import $1 as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null; }
export LD_LIBRARY_PATH="$(libdir nvidia.nccl):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
