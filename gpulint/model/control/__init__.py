"""Layer 4, control: which code runs every step.

* `loops`: hot loops, step loops, loops that fetch data;
* `contexts`: `no_grad` / `inference_mode`, `autocast` and timing contexts;
* `repetition`: code that runs repeatedly (per step, per call of a model) or once;
* `file_calls`: a file's calls of its own functions by name, and its classes related by inheritance;
* `amp`: autocast regions, their dtypes, GradScalers;
* `distributed`: data-parallel scripts and the loaders their training loops iterate.
"""
