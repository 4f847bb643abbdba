#!/usr/bin/env bash
# Data-parallel fuzzing evidence: a clean campaign over scenarios/spaces/data_parallel.toml
# (two replicas, dummy batches, the expert-parallel drafter MoE, EAGLE in about half the cases) must
# find nothing; with each DP fault on, a campaign in the same space must find it and shrink it.
#   scripts/dev/data_parallel_campaign.sh OUT.txt [CLEAN_CASES] [FAULT_CASES] [BINARY]
# SEED picks the case stream (2701: the one looked at while building; 2702 is held out).
set -euo pipefail
cd "$(dirname "$0")/../.."
TITLE='data parallelism' CLEAN_SPACE=scenarios/spaces/data_parallel.toml SEED=${SEED:-2701} FAULT_CASES=${3:-400} \
  FAULTS=${FAULTS:-dummy_run_one_forward dummy_run_skips_drafter} \
  exec scripts/dev/scheduler_fault_campaign.sh "$1" "${2:-20000}" 0 "${4:-build/default/tools/ppspec}"
