#!/usr/bin/env bash
# Re-record tests/captures/live_clean.mcap for real: the RflySim stand-in (`gizmo-host sim`, its
# built-in Config.json), the emulated board on a pty (`gizmo-host emulate`, boxes from the
# stand-in) and `gizmo-host record`, live on loopback. It binds RflySim's own ports (30101 and
# the box sensor's): run it where they are free. Then `python3 dev.py regen-goldens` and say
# in the commit why the live recording changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
gh=".venv/bin/gizmo-host"
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
"$gh" sim --write-config "$dir/Config.json" --duration 9 >/dev/null &
for _ in $(seq 100); do [ -s "$dir/Config.json" ] && break; sleep 0.05; done
cat >"$dir/host.toml" <<TOML
[serial]
silent_after_s = 1.0
[verdict]
select = "type=5,id=11"
[camera]
rflysim_sensor = 1
[world]
rate_hz = 5
[rflysim]
copter_id = 1
config = "$dir/Config.json"
TOML
"$gh" emulate --link "$dir/tty" --rfly-config "$dir/Config.json" --class 2=PEDESTRIAN \
    --class 3=CAT --per-cycle all --duration 7 >/dev/null &
for _ in $(seq 100); do [ -e "$dir/tty" ] && break; sleep 0.05; done
"$gh" record --serial "$dir/tty" --config "$dir/host.toml" --duration 3 \
    --output tests/captures/live_clean.mcap
