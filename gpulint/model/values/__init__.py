"""Layer 3, values: what an expression is.

* `kinds`: the kinds of value (tensor, model, loader, optimizer, number, ...)
  and what torch's names say about them;
* `scopes`: what each name of a function holds, statement by statement;
* `values`: the kind of any expression, and the questions built on it (is
  this a model call, an optimizer step, a batch, a DataLoader?);
* `host`: which tensors are known to live in host memory;
* `devices`: where tensors are built and moved (factories, device arguments);
* `loaders`: which DataLoader a batch comes from;
* `torch_signatures`: what torch's own stubs say each function and Tensor
  method returns (a table generated from the torch wheel).
"""
