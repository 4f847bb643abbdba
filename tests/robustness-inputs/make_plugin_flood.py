#!/usr/bin/env python3
"""Writes a 2-rank NCCL-profiler job to DIR/rank0.jsonl, DIR/rank1.jsonl: N all_reduces per rank, each
posted, started and completed (3 lines), a clean job; one every PERIOD ns of the plugin's clock (default 30).
usage: make_plugin_flood.py N DIR [PERIOD]"""
import os, sys
n, d = int(sys.argv[1]), sys.argv[2]
period = int(sys.argv[3]) if len(sys.argv) > 3 else 30
os.makedirs(d, exist_ok=True)
for r in range(2):
    with open(f"{d}/rank{r}.jsonl", "w") as f:
        f.write('{"ppspec_nccl_profiler":1,"rank":%d,"host":"h","pid":%d,"clock":"realtime"}\n' % (r, 100 + r))
        f.write('{"ev":"comm_init","t":1000,"comm":"00000000000000aa","name":"w","ranks":2,"comm_rank":%d,"interface":5}\n' % r)
        t = 2000
        for i in range(n):
            f.write('{"ev":"op_posted","t":%d,"comm":"00000000000000aa","op":%d,"func":"all_reduce","dtype":"f32","count":4,"stream":1}\n' % (t, i))
            f.write('{"ev":"op_started","t":%d,"comm":"00000000000000aa","op":%d}\n' % (t + 10, i))
            f.write('{"ev":"op_completed","t":%d,"comm":"00000000000000aa","op":%d}\n' % (t + 20, i))
            t += period
        f.write('{"ev":"comm_finalized","t":%d,"comm":"00000000000000aa"}\n' % t)
        f.write('{"ppspec_nccl_profiler_end":1,"disabled":false}\n')
