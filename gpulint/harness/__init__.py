"""The runtime harness: `gpulint bench` and `gpulint verify`.

Nothing here imports torch in the gpulint process itself: every measurement
runs in a fresh subprocess (`worker.py` for bench, `boot.py` for verify), so
global switches (TF32, anomaly mode, sync debug mode) never leak between the
sides, and `gpulint check` stays free of torch.
"""
