"""Stage clocks: nested stages pause the enclosing one, so stages add up without double counting."""

import time

from stage_times import StageTimer, format_line


def test_nested_stage_pauses_the_outer_one():
    timer = StageTimer()
    with timer.stage("propagation"):
        time.sleep(0.02)
        with timer.stage("encoding"):
            time.sleep(0.05)
        time.sleep(0.02)
    seconds = timer.seconds
    assert 0.05 <= seconds["encoding"] < 0.09
    assert 0.04 <= seconds["propagation"] < 0.05 + 0.03  # the inner 50 ms are not counted twice


def test_repeated_stages_add_up_and_merge():
    timer = StageTimer()
    for _ in range(3):
        with timer.stage("decoder"):
            pass
    timer.merge({"decoder": 1.0, "queue_wait": 0.5})
    assert 1.0 <= timer.seconds["decoder"] < 1.01 and timer.seconds["queue_wait"] == 0.5


def test_stage_closes_on_error_and_synchronize_runs_at_each_reading():
    calls = []
    timer = StageTimer(synchronize=lambda: calls.append(1))
    try:
        with timer.stage("encoder"):
            raise ValueError("boom")
    except ValueError:
        pass
    assert "encoder" in timer.seconds and len(calls) == 2
    with timer.stage("decoder"):  # the stack is empty again: nothing is paused or resumed wrongly
        pass
    assert set(timer.seconds) == {"encoder", "decoder"}


def test_format_line_in_pipeline_order():
    line = format_line({"encoding": 0.0011, "zeta": 1.0, "queue_wait": 0.25, "encoder": 0.3})
    assert line == "queue_wait=0.250s encoder=0.300s encoding=0.001s zeta=1.000s"
