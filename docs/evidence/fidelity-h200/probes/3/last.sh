#!/bin/bash
# The last hardware checks of this change: the unmatched self send, the 0316 program again (a
# device fault surfacing as NCCL's unhandled CUDA error), and serving on both backends.
export NCCL_NVLS_ENABLE=0
NCCL_DIR=$(python3 -c "import nvidia.nccl as m;print(list(m.__path__)[0])")
export LD_LIBRARY_PATH=$NCCL_DIR/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export PPSPEC_EXE=$PWD/gpu-bin/ppspec PPSPEC_SOURCE_DIR=$PWD
B=gpu-bin/ppspec
timeout 60 $B run --backend gpu --hang-timeout 5 scenarios/programs/self_send_unmatched.toml 2>&1 | head -4 | cut -c1-220
tar xzf fid-kept.tgz -C $OUT
timeout 60 $B fidelity --programs 360 --seed 1 --backend both --hang-timeout 3 --out $OUT/fid > $OUT/fid.log 2>&1
echo "fidelity rc=$?"; grep -E "0316|fidelity:" $OUT/fid.log | cut -c1-200
tar czf $OUT/fid.tgz -C $OUT fid fid.log && rm -rf $OUT/fid
for f in scenarios/serving/pp2_tp1_k5.toml scenarios/regressions/pp2_tp1/pre_56956.toml scenarios/regressions/pp2_tp1/pre_56956_off.toml; do
  timeout 120 $B run --backend both $f 2>&1 | grep -E "^(ok|FAIL)|sim = GPU|differ" | cut -c1-220
done
