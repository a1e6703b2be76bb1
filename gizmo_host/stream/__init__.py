"""The pure per-frame pipeline: sequence tracking, the device clock, the result
store and verdicts. Every host time is an argument; no I/O."""
