#!/usr/bin/env bash
# KernelBench levels 1-2 at full size (issue 13), within the call's seconds; cut short, the same command goes on
# (verdicts and the references that ran are remembered in the home).
#   bash scripts/box/kb.sh SECONDS template            # the template teacher, the floor: one turn
#   bash scripts/box/kb.sh SECONDS leap_rl-...         # a policy of a stage run in the home: three turns
#   bash scripts/box/kb.sh SECONDS chain-kb.json:sft   # the run a chain's state names (chain.sh, the same call)
#   bash scripts/box/kb.sh SECONDS template leap_rl-... # one after the other within the call: the next starts only
#                                                       # once the one before ended `succeeded` (no idle box between)
# The KernelBench checkout is carried as .kerneldojo/kernelbench (levels 1-3 of ../shared/kernelbench).
. "$(dirname "$0")/common.sh"
seconds=$1; shift
gpu_tests
evaluate() {
  who=$1
  if [[ "$who" == *.json:* ]]; then   # STATE:STEP -> the stage run a chain.sh state file recorded for that step
    who=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$KD_HOME/${who%%:*}" "${who#*:}")
    echo "evaluating $who"
  fi
  # a policy's generation budget: KernelBench's kernels run longer than the synthesized graphs' the miniature was
  # trained on (the template's answers to levels 1-2 take 149-724 tokens of its tokenizer, 14 of 38 over the
  # miniature's 512; its own test-split kernels 105-551), so 512 would cut off answers the problem needs (the final
  # policy's own failures there are not cut-offs: on the CPU, 21 of 24 answers ended by themselves, docs/kernelbench.md)
  if [ "$who" = template ]; then source=(--template); turns=1
  else source=(--from-run "$who" --set evaluate.generation.max_new_tokens=${KB_NEW_TOKENS:-1024}); turns=3; fi
  left=$(( seconds - $(elapsed) - 30 ))
  rc=0
  # INFO on the console: each slow reference's phases (where a full-size reference's minutes go) reach kb.log.
  # A level-1 problem's three trials are ~9 GB (the median; 2 GB in, 1 GB out a trial), its elementwise ones' 38.6 GB
  # (12.88 GB a trial; most of what the template answers): kept on the judge's disk (stored_trials_gb=20: what fits) rather
  # than made again by the reference for every candidate trial (at 12 GB none of theirs was kept: each candidate
  # trial waited ~15-20 s for its reference trial again); kept_gb bounds what stays between problems (the box has
  # a 64 GB disk; a disk that fills makes a trial again instead of failing the problem).
  # min_free_disk_gb=36, stored_trials_gb=20: trials are kept only while 36 GB of the 64 GB disk stay free for what a
  # timed full-size problem cannot do without (its timing inputs and checked outputs: ~26 GB a level-1 elementwise
  # problem; session 13: kept trials filled the disk, and the timing inputs could not be written). At 40/30 (session
  # 21) a second problem's timing inputs found the disk full two minutes in; a full disk now also gives up what idle
  # problems keep before it ends the stage (verifier/judge.py _on_judges_disk).
  # memory_admission=reference: a judgement takes its problem's estimate, not 32 GB (level 2's median trial is
  # 0.2 GB: 3 judgements at once became as many as compile_workers)
  PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL=INFO limited "$left" python3 -m flows.cli --debug eval "${source[@]}" --kernelbench .kerneldojo/kernelbench \
    --level 1 --level 2 -c "$CONFIG" --set home="$KD_HOME" --set evaluate.max_turns=$turns \
    --set verifier.memory_limit_mb=32768 --set verifier.run_timeout_s=90 --set verifier.kept_gb=16 \
    --set verifier.stored_trials_gb=${KB_STORED_GB:-20} --set verifier.min_free_disk_gb=${KB_MIN_FREE_GB:-36} \
    --set verifier.compare_torch_compile=true --set verifier.memory_admission=reference 2>&1 | tee -a "$OUT/kb.log" || rc=$?   # the whole log comes back
  echo "eval of $who: rc $rc at $(elapsed) s (124: cut by the call's limit; the same command goes on)"
  return "$rc"
}
for who in "$@"; do
  # the next only after a whole evaluation, with a minute left for it to start at least
  evaluate "$who" || break
  (( seconds - $(elapsed) - 30 > 60 )) || break
done
pack_home
