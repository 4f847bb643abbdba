#!/bin/bash
# Runs every probe scenario on 2 GPUs, printing one line per scenario.
B=${PPSPEC_BIN:-gpu-bin}/ppspec
for f in probe/*.toml; do
  echo "== $f"; timeout 60 $B run --backend gpu --hang-timeout 4 $f 2>&1 | head -3 | cut -c1-200
done
for f in probe/inv_p2p.toml probe/inv_coll.toml probe/ungrouped_exchange_0.toml; do
  echo "== NCCL_RUNTIME_CONNECT=0 $f"; NCCL_RUNTIME_CONNECT=0 timeout 60 $B run --backend gpu --hang-timeout 4 $f 2>&1 | head -3 | cut -c1-200
done
