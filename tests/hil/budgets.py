"""The HIL chains' host settings, board model and accuracy budgets, shared by the tests."""

PERIOD_S = 1 / 30
TTL_S = 0.25
SILENT_AFTER_S = 0.3
RESET_HOLD_S = 0.3
LOCK_S = 0.5  # the first device clock epoch locks after 0.5 s (gizmo_host/stream/clock.py)
RELOCK_S = 2 * PERIOD_S  # a later one after three frames over 66 ms (the skew kept)
RECOVER_S = 0.5  # issue 29: PROCEED again this soon after a step, a reset or a reconnection
HOLD_AFTER_S = PERIOD_S + TTL_S
BEARING_BUDGET_DEG = 0.5  # p95, issue 12's accuracy case
POSITION_BUDGET_M = 0.15  # p95
HOST_TOML = (
    f"[serial]\nsilent_after_s = {SILENT_AFTER_S}\n"
    f"[store]\nttl_ms = {TTL_S * 1000}\nreset_hold_ms = {RESET_HOLD_S * 1000}\n"
)
BOARD = ("--latency", "uniform:15:40", "--skew-ppm", "100")
