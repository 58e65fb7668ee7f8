"""The benchmark scripts' arithmetic (their timings are reported, never asserted)."""

import json

import pytest

from benchmarks.dcp_savings import replay


def _row(step, group, index, outcomes, tokens=10, seconds=1.0):
    turns = [{"generated_tokens": tokens, "verdict": {"category": "pass" if ok else "wrong_output",
                                                      "compile_seconds": seconds, "run_seconds": 0.0}}
             for ok in outcomes]
    return {"step": step, "group_id": group, "rollout_index": index, "turns": json.dumps(turns)}


def test_dcp_replay_keeps_first_turns_and_only_gated_groups_debugging():
    rows = [  # G = 2, Full expanded everything: group "easy" all passed at once, "mixed" has one failure
        _row(0, "easy", 0, [True]), _row(0, "easy", 1, [True]),
        _row(0, "mixed", 0, [True]), _row(0, "mixed", 1, [False, False, True]),
        _row(0, "hard", 0, [False, False, False]), _row(0, "hard", 1, [False, True]),
    ]
    step = replay(rows, tau_min=1, tau_max=1, gen_seconds_per_token=0.01)[0]
    assert (step["groups"], step["kept"]) == (3, 1)  # only "mixed" has exactly one first-turn failure
    assert step["full"][0] == 1 + 1 + 1 + 3 + 3 + 2
    assert step["dcp"][0] == 6 + 2  # six first turns + the two later turns of the kept group
    assert step["dcp"][1] == 8 * 10 and step["full"][2] > step["dcp"][2]
    assert step["dcp"][2] == pytest.approx(8 * (1.0 + 10 * 0.01))
