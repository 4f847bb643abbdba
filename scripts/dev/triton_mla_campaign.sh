#!/usr/bin/env bash
# TRITON_MLA fuzzing evidence: a clean campaign over scenarios/spaces/triton_mla.toml (about half the
# cases on TRITON_MLA) must find nothing; with the KV-cache group fault on, a campaign in the same
# space must find it and shrink it.
#   scripts/dev/triton_mla_campaign.sh OUT.txt [CLEAN_CASES] [FAULT_CASES] [BINARY]
# SEED picks the case stream (5601: the one looked at while building; 5602 is held out).
set -euo pipefail
cd "$(dirname "$0")/../.."
TITLE='TRITON_MLA' CLEAN_SPACE=scenarios/spaces/triton_mla.toml SEED=${SEED:-5601} FAULT_CASES=${3:-400} \
  FAULTS=${FAULTS:-draft_shares_target_kv_group} \
  exec scripts/dev/scheduler_fault_campaign.sh "$1" "${2:-20000}" 0 "${4:-build/default/tools/ppspec}"
