#!/usr/bin/env bash
# LEAP against its baselines from one warmup policy (issue 12 item 5), within the call's seconds; cut short, the
# same command goes on from its state (each finished training and evaluation is kept in the home).
#   bash scripts/box/ablation.sh SECONDS WARMUP_RUN [leap_ablation options]
#   bash scripts/box/ablation.sh 560 warmup_rl-8c890db155 --seconds 120 --seeds 0
#   BRING_BACK_ARMS="leap@0" bash scripts/box/ablation.sh ...   # and the LEAP arm's policy comes back as a parcel
# The warmup run's policy must be in the home: made on this box (chain.sh), or carried as a parcel
# (.kerneldojo/gpu/parcels/<run>.parcel.*, brought back by chain.sh's BRING_BACK_STAGES=warmup_rl) in a call after
# the one that carried the site.
. "$(dirname "$0")/common.sh"
seconds=$1 warmup=$2; shift 2
gpu_tests
# each arm's evaluation untimed (accuracy by turn is what the ablation compares; timed, one took 221-348 s)
left=$(( seconds - $(elapsed) - 30 ))   # 30 s to pack the home and return it
rc=0
limited "$left" python3 -m benchmarks.leap_ablation --config "$CONFIG" --set home="$KD_HOME" --set evaluate.split=test \
  --set "evaluate.untimed_after=[sft,rft,warmup_rl,leap_rl]" --from-run "$warmup" --state "$KD_HOME/ablation-$warmup.json" --limit "$left" \
  --deadline "${DEADLINE:-$(( left - 200 ))}" --markdown "$OUT/ablation.md" "$@" || rc=$?
echo "leap_ablation rc $rc at $(elapsed) s (124: the call's limit cut a run; the same command goes on)"
cat "$KD_HOME/ablation-$warmup.json" 2>/dev/null | head -c 3000 || true
# BRING_BACK_ARMS="leap@0": those arms' trained policies come back as parcels (one a call: 55 MB) — LEAP's is the
# miniature's final policy, which KernelBench's evaluation (kb.sh) judges in a later call or session
if [ -n "${BRING_BACK_ARMS:-}" ]; then
  BRING_BACK="${BRING_BACK:-} $(python3 -c 'import json, sys; runs = json.load(open(sys.argv[1]))["runs"]
print(" ".join(runs[a]["leap_rl"] for a in sys.argv[2:] if "leap_rl" in runs.get(a, {})))' \
    "$KD_HOME/ablation-$warmup.json" $BRING_BACK_ARMS)"
fi
pack_home
