#!/bin/bash
# The last hardware pass: re-run on GPUs the programs that disagreed (their kept GPU results were
# cleared), then every program scenario, then the GPU tests.
export NCCL_NVLS_ENABLE=0
NCCL_DIR=$(python3 -c "import nvidia.nccl as m;print(list(m.__path__)[0])")
export LD_LIBRARY_PATH=$NCCL_DIR/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export PPSPEC_EXE=$PWD/gpu-bin/ppspec PPSPEC_SOURCE_DIR=$PWD
B=gpu-bin/ppspec
tar xzf fid-kept.tgz -C $OUT
timeout 200 $B fidelity --programs 360 --seed 1 --backend both --hang-timeout 3 --out $OUT/fid > $OUT/fid.log 2>&1
echo "fidelity rc=$?"; tail -2 $OUT/fid.log
tar czf $OUT/fid.tgz -C $OUT fid fid.log && rm -rf $OUT/fid
timeout 240 $B run --backend gpu --hang-timeout 5 scenarios/programs/*.toml > $OUT/programs_gpu.txt 2>&1
echo "programs rc=$?"; grep -E "^(ok|FAIL)" $OUT/programs_gpu.txt | cut -c1-160
timeout 150 gpu-bin/ppspec_gpu_tests > $OUT/gpu_tests.txt 2>&1
echo "gpu tests rc=$?"; tail -4 $OUT/gpu_tests.txt
