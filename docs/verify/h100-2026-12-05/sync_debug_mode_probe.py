# session probe (untracked): does sync debug mode warn on Event/Stream.synchronize()?
import warnings
import torch
torch.cuda.set_sync_debug_mode("warn")
x = torch.randn(1024, 1024, device="cuda")
for what in ("event", "stream", "device"):
    y = x @ x
    e = torch.cuda.Event()
    e.record()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        if what == "event":
            e.synchronize()
        elif what == "stream":
            torch.cuda.current_stream().synchronize()
        else:
            torch.cuda.synchronize()
    print(what, "warnings:", len(w), [str(m.message)[:70] for m in w])
