#!/usr/bin/env bash
# The DAG one step at a time on the box, within the call's seconds (resumable: run it again with the same state).
#   bash scripts/box/chain.sh SECONDS STATE [stage_chain options] -- STEPS...
#   bash scripts/box/chain.sh 560 chain-data.json --from-run hints-8e88... -- distill
#   bash scripts/box/chain.sh 560 chain-seed0.json --from-run distill-... --set seed=0 --set evaluate.split=test \
#       -- sft evaluate@sft rft evaluate@rft warmup_rl evaluate@warmup_rl leap_rl evaluate
#   BRING_BACK_STAGES=warmup_rl bash scripts/box/chain.sh ...   # and its warmup policy comes back as a parcel
#   BRING_BACK_STAGES=last bash scripts/box/chain.sh ...        # the newest trained policy (a chain cut short)
. "$(dirname "$0")/common.sh"
seconds=$1 state=$2; shift 2
gpu_tests
left=$(( seconds - $(elapsed) - 30 ))   # 30 s to pack the home and return it
# DEADLINE: start no step after it (default: 200 s before the limit, about what a stage but RL takes; an RL stage
# starts only where its time budget fits the limit)
rc=0
limited "$left" python3 -m benchmarks.stage_chain --state "$KD_HOME/$state" --limit "$left" \
  --deadline "${DEADLINE:-$(( left - 200 ))}" -c "$CONFIG" --set home="$KD_HOME" "$@" || rc=$?
echo "stage_chain rc $rc at $(elapsed) s (124: the call's limit cut a step; the same command goes on)"
cat "$KD_HOME/$state" || true
# BRING_BACK_STAGES="warmup_rl": the policies of those steps of the state come back as parcels (common.sh);
# "last": the newest training step's, for a chain a session's device time cut short (carried into the next
# session's box, the chain goes on from it instead of training its steps again). One parcel a call: 55 MB.
if [ -n "${BRING_BACK_STAGES:-}" ]; then
  BRING_BACK="${BRING_BACK:-} $(python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))
from benchmarks.stage_chain import POLICY_STAGES
trained = [k for k in s if k in POLICY_STAGES]
wanted = [trained[-1] if k == "last" and trained else k for k in sys.argv[2:]]
print(" ".join(s[k] for k in dict.fromkeys(wanted) if k in s))' "$KD_HOME/$state" $BRING_BACK_STAGES)"
fi
pack_home
