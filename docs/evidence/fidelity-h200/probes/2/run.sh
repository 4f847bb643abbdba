#!/bin/bash
# Probe scenarios, then a first fidelity run; results under $OUT.
export NCCL_NVLS_ENABLE=0
NCCL_DIR=$(python3 -c "import nvidia.nccl as m;print(list(m.__path__)[0])")
export LD_LIBRARY_PATH=$NCCL_DIR/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH
export PPSPEC_EXE=$PWD/gpu-bin/ppspec PPSPEC_SOURCE_DIR=$PWD
B=gpu-bin/ppspec
for f in probe2/*.toml; do
  echo "== $f"; timeout 60 $B run --backend gpu --hang-timeout 4 $f 2>&1 | head -4 | cut -c1-260
done
mkdir -p $OUT/fid
timeout ${FID_SECONDS:-420} $B fidelity --programs ${FID_PROGRAMS:-150} --seed 1 --backend both --hang-timeout 3 --out $OUT/fid > $OUT/fid.log 2>&1
echo "fidelity rc=$?"; tail -3 $OUT/fid.log
tar czf $OUT/fid.tgz -C $OUT fid fid.log && rm -rf $OUT/fid
