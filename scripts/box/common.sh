# Sourced by the scripts beside it, on a lent GPU box, in the repository's root (where the device tool runs a
# command). The box has torch and CUDA but not the pipeline's other packages: they come as one carried archive
# (`python -m benchmarks.gpu_box_bundle` -> .kerneldojo/gpu/site.tar.xz), unpacked once a box. The miniature's
# records (runs/<name>.tar.xz, tracked: the only storage that outlives a checkout here) are unpacked once a box as
# its home; every script ends by packing the home's records into $OUT/home.tar.xz (unpack it over .kerneldojo/).
set -euo pipefail
export PYTHONPATH=$PWD:/root/site PYTHONUNBUFFERED=1
HOME_NAME=${KD_HOME_NAME:-mini}
KD_HOME=.kerneldojo/$HOME_NAME
CONFIG=${KD_CONFIG:-configs/$HOME_NAME.yaml}
BOX_START=$(date +%s)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

elapsed() { echo $(( $(date +%s) - BOX_START )); }

# limited SECONDS CMD...: `timeout -k 12 SECONDS CMD`, and 2 s and 8 s after its SIGTERM every thread's stack of
# the command's process goes to its stderr (SIGUSR1: warehouse/process.py STACKS_SIGNAL) — what an orderly end
# that outlives its signal waits for (sessions 10-12: SIGKILLed without a word)
limited() {
  local seconds=$1; shift
  timeout -k 12 "$seconds" "$@" &
  local guard=$!
  # the dumper's sleep must not hold the call's stdout: a command piped into `tail` waited for it to the end of
  # its sleep (session 18: two ablation calls done at ~290 s ended at ~545 s, 500 s of device time lost)
  ( sleep $(( seconds + 2 )); for late in 0 6; do sleep "$late"
      for pid in $(pgrep -P "$guard" || true); do kill -USR1 "$pid" 2>/dev/null || true; done; done ) \
    </dev/null >/dev/null 2>&1 &
  local dumper=$! rc=0
  wait "$guard" || rc=$?
  pkill -P "$dumper" 2>/dev/null || true
  kill "$dumper" 2>/dev/null || true
  return "$rc"
}

# processes an earlier call left on a warm box (a judge, a sandbox, a Prefect server, a build): they can hold the
# GPU, its memory or its lock, and the judge's heartbeat names a lock's holder by pid — so say which were there
leftover=$(ps -eo pid=,etimes=,args= | awk '$2 > 30 && /python|uvicorn|nvcc|kd-/ && !/awk/' | cut -c1-160 | head -20 || true)
if [ -n "$leftover" ]; then echo "processes left by earlier calls:"; echo "$leftover"; fi

if [ ! -e /root/site/.unpacked ]; then
  mkdir -p /root/site
  xz -T0 -dc .kerneldojo/gpu/site.tar.xz | tar -C /root/site -xf -
  touch /root/site/.unpacked
  echo "site unpacked in $(elapsed) s"
fi
if [ ! -e "$KD_HOME/warehouse.duckdb" ] && [ -e "runs/$HOME_NAME.tar.xz" ]; then
  mkdir -p .kerneldojo
  xz -T0 -dc "runs/$HOME_NAME.tar.xz" | tar -C .kerneldojo -xf -
  echo "home $KD_HOME unpacked from runs/$HOME_NAME.tar.xz"
  if [ -e "runs/$HOME_NAME-verdicts.jsonl.xz" ]; then   # verdicts of stages cut short on an earlier box
    python3 -m flows.cli verdicts import "runs/$HOME_NAME-verdicts.jsonl.xz" -c "$CONFIG" --set home="$KD_HOME"
  fi
fi

# Policies cross the wall as parcels (benchmarks/policy_parcel.py: bfloat16, parts of 15 MiB, sha256-checked):
# BRING_BACK="<stage run> ..." packs each run's policy into $OUT after the home (the miniature's: 4 parts, 55 MB,
# beside the home's ~9 MB within a call's 64 MiB); copy them to .kerneldojo/gpu/parcels/ here, and carry them in
# later calls of a session whose box has the site already: each parcel is unpacked into its run's policy folder
# unless the home has one. A parcel (55 MB) and the tracked tree (12 MB) do not fit one call's 64 MiB: carry its
# first parts as `.kerneldojo/gpu/parcels-a` in one call (an ignored folder a warm box keeps), the rest as
# `.kerneldojo/gpu/parcels` in the next; the parts of every parcels-* folder join parcels/ here (sha256-checked
# when unpacked).
for folder in .kerneldojo/gpu/parcels-*/; do
  [ -d "$folder" ] || continue
  mkdir -p .kerneldojo/gpu/parcels && cp -n "$folder"* .kerneldojo/gpu/parcels/ 2>/dev/null || true
done
for manifest in .kerneldojo/gpu/parcels/*.parcel.json; do
  [ -e "$manifest" ] || continue
  run=$(basename "$manifest" .parcel.json)
  if [ ! -e "$KD_HOME/artifacts/$run/policy/config.json" ]; then
    python3 -m benchmarks.policy_parcel unpack "$manifest" "$KD_HOME/artifacts/$run/policy"
  fi
done

# The records, not the policies (100+ MB each: a call returns at most 64 MiB) nor the verifier's caches (builds,
# kept reference trials of many GB, and the verdict store with its signing secret, which stays off git).
pack_home() {
  ( cd .kerneldojo && tar --exclude='*.safetensors' --exclude='*.bin' --exclude='*.pt' --exclude='*/policy' \
      --exclude='*/checkpoints' --exclude="$HOME_NAME/cache" -cf - "$HOME_NAME" ) | xz -T0 -6 > "$OUT/home.tar.xz"
  echo "home packed: $(du -h "$OUT/home.tar.xz" | cut -f1) at $(elapsed) s"
  # the verdict store apart, unsigned (its secret stays on the box): commit it as runs/<name>-verdicts.jsonl.xz and
  # a stage cut short here goes on from its verdicts on the next box instead of judging everything again
  python3 -m flows.cli verdicts export "$OUT/verdicts.jsonl.xz" -c "$CONFIG" --set home="$KD_HOME" || true
  for run in ${BRING_BACK:-}; do
    python3 -m benchmarks.policy_parcel pack "$KD_HOME/artifacts/$run/policy" "$OUT" --name "$run" || true
  done
}

# GPU_TESTS="expr" runs the gpu-marked tests matching it first (GPU_TESTS_S seconds at most); with
# GPU_TESTS_MUST_PASS=1 a failure (or a run with no summary) ends the call there, before a chain spends the
# device time on a judge the tests just found broken.
gpu_tests() {
  [ -n "${GPU_TESTS:-}" ] || return 0
  # -v: each test's outcome on its own line as it ends, so a run its timeout cuts (no summary: session 22's 21
  # dots) still says which tests passed, which failed and which was running
  timeout -k 5 "${GPU_TESTS_S:-240}" python3 -m pytest -v -p no:cacheprovider -m gpu -k "$GPU_TESTS" tests \
    > "$OUT/gputests.log" 2>&1 || true
  # a run its timeout cut has no summary line: no match must not end the call (set -e, pipefail)
  grep -E "passed|failed|error" "$OUT/gputests.log" | grep -v "cpp_extension" | tail -15 || true
  grep -E " (FAILED|ERROR)( |$)" "$OUT/gputests.log" | head -20 || true
  grep -qE "[0-9]+ passed" "$OUT/gputests.log" || { echo "cut at ${GPU_TESTS_S:-240} s after $(grep -c " PASSED" \
    "$OUT/gputests.log") passed; running then: $(grep "^tests/" "$OUT/gputests.log" | tail -1)"; }
  grep -E "^E " "$OUT/gputests.log" | head -20 || true   # the first lines of each failure's assertion
  echo "gpu tests done at $(elapsed) s"
  if [ -n "${GPU_TESTS_MUST_PASS:-}" ] && { grep -qE "[0-9]+ (failed|error)" "$OUT/gputests.log" \
      || ! grep -qE "[0-9]+ passed" "$OUT/gputests.log"; }; then
    echo "GPU tests did not pass: stopping here (GPU_TESTS_MUST_PASS)"
    exit 3
  fi
}
