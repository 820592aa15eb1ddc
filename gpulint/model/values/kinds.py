"""The kinds of value the model tells apart, and what names say about them.

A kind is one of the strings below; unknown is None. What torch's own names
say (which `torch.*` functions return tensors, which tensor methods and
attributes do not) and what a variable's name suggests (`model`, `loader`,
`optimizer`, `loss`) live here, so that the layers above ask one place.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from gpulint.model.names import last_name
from gpulint.model.values.torch_signatures import function_kind, tensor_attribute_kind, tensor_method_kind

# Tensor methods that copy to the host. `.item()` / `.cpu()` / `.numpy()` exist
# on little else than tensors (and numpy values, which inference tells apart),
# so they are flagged unless the receiver is known not to be a tensor;
# `.tolist()` is common on numpy arrays too and needs a known tensor.
TENSOR_ONLY_METHODS = frozenset({"item", "cpu", "numpy"})
HOST_METHODS = TENSOR_ONLY_METHODS | {"tolist"}
# builtins that read a tensor's value on the host
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})
# torch functions that join a list of tensors into one (`torch.cat(xs)`, `torch.stack(xs)`)
TENSOR_JOINS = frozenset(("cat", "concat", "concatenate", "stack", "vstack", "hstack"))

TENSOR = "tensor"
MODEL = "model"
LOADER = "loader"
LOADER_ITER = "loader_iter"
OPTIMIZER = "optimizer"
SCALER = "scaler"
CRITERION = "criterion"
NUMPY = "numpy"
NUMBER = "number"
OTHER = "other"
# an optimizer's `param_groups`, one group of it (a dict of hyperparameters
# and its "params"), and a dict whose values are all host values (the
# `**kwargs` of a function whose every caller passes numbers or strings)
PARAM_GROUPS = "param_groups"
PARAM_GROUP = "param_group"
HOST_MAPPING = "host_mapping"
# a tensor in host memory, as the project knows it: what a function returns
# (`return loss.detach().cpu()`) or every caller passes; the values layer
# reads it as a TENSOR, and `HostValues` knows where it lives
HOST_TENSOR = "host_tensor"
# a tuple of Python numbers, as the project knows it: what a step function
# returns (`return qf1_loss.item(), qf2_loss.item(), alpha.item()`); each
# element unpacked from it is a NUMBER
HOST_NUMBERS = "host_numbers"
# a dataset whose samples are in memory, as the project knows it: what a
# class of the project builds whose `__getitem__` only looks up what its
# `__init__` stored (`loaders.serves_stored_items`); the values layer reads
# it as OTHER, and GPU202 asks for it
IN_MEMORY_DATASET = "in_memory_dataset"
# kinds of value that live on the host: reading them waits for nothing
HOST_KINDS = frozenset({NUMBER, OTHER, NUMPY, HOST_TENSOR})

MODEL_NAME_RE = re.compile(
    r"^(model|net|network|backbone|classifier|encoder|decoder|generator|discriminator|"
    r"critic|actor|policy|teacher|student|unet|vae|transformer|netG|netD|G|D)$"
    r"|^(model|net)_\w+$|^\w+_(model|net|network)$",
)
LOADER_NAME_RE = re.compile(r"^(\w+_)?(data)?loader(_\w+)?$|^(\w+_)?dl$|^dataloader\w*$", re.I)
OPTIMIZER_NAME_RE = re.compile(r"^(\w+_)?(opt|optim|optimizer|optimiser)(_\w+)?$|^opt[A-Z]\w*$")
SCALER_NAME_RE = re.compile(r"^(\w+_)?(grad_)?scaler$")
CRITERION_NAME_RE = re.compile(
    r"^(criterion|criterion_\w+|\w+_criterion|loss_fn|loss_func|lossfn|loss_function|\w+_loss_fn)$"
)
LOSS_NAME_RE = re.compile(r"^(loss|\w+_loss|loss_\w+)$")
LOSS_ACCUMULATOR_RE = re.compile(
    r"^(total|running|epoch|avg|mean|sum|cum|accum|acc|train|val|valid|test|eval|best|prev|last|min|max|"
    r"batch_avg|smoothed|ema|log)_"
)
# `compute_loss`, `use_loss`, `return_loss`, `can_return_loss`: a function or a flag, not a loss value
LOSS_NOT_VALUE_RE = re.compile(
    r"^(compute|calc|calculate|get|use|with|has|return|do|enable|skip|apply|no|is|should|need|build|make|can|will|must|"
    r"init|create|add|set|update|log|print|report)_"
)
# ... nor a name for what records or computes losses: `loss_meter = AverageMeter()`, `loss_tracker`,
# `loss_class` (an object of a loss class; not `loss_dict`,
# `loss_list`: their elements may be loss tensors)
LOSS_HOLDER_SUFFIX_RE = re.compile(r"_(meters?|trackers?|recorders?|loggers?|monitors?|fns?|funcs?|class|cls|obj|object|instance|"
                                   r"weights?|coefs?|coefficients?|factors?|names)$")  # (and settings: `loss_weights`)
# ... nor a statement about the loss (`loss_is_scaled_for_ga`, `loss_has_nan`): a flag
LOSS_PREDICATE_RE = re.compile(r"_(is|has|was|were|are|should|can|needs?|must)(_|$)")
# a function that makes or hands back a model (`load_model(model, path)`,
# `build_network(cfg)`): a call of it returns the model, not its output
MODEL_FACTORY_NAME_RE = re.compile(
    r"^_*(load|build|get|create|make|init|initiali[sz]e|setup|set_up|prepare|construct|instantiate|restore|wrap|convert)_")
NOT_MODEL_HINT_RE = re.compile(r"tokeni[sz]er|processor|config|feature_extractor|scheduler", re.I)
# `loss_params`, `model_cfg`, `loss_type`: the settings of a thing, not the thing
SETTINGS_SUFFIX_RE = re.compile(
    r"_(params?|cfgs?|conf|configs?|args|kwargs|opts|options|hparams|settings|types?|names?|mode|kind|specs?)$"
)
# constructors and loaders of settings objects: what they return holds
# numbers, strings and flags, not tensors
SETTINGS_HOLDERS = frozenset((
    "munch.Munch", "munch.munchify", "munch.DefaultMunch", "easydict.EasyDict", "addict.Dict", "addict.addict.Dict",
    "types.SimpleNamespace", "argparse.Namespace", "box.Box", "dotmap.DotMap", "attrdict.AttrDict",
    "ml_collections.ConfigDict", "ml_collections.FrozenConfigDict", "yaml.load", "yaml.safe_load",
    "yaml.full_load", "json.load", "json.loads", "toml.load", "tomllib.load", "tomli.load",
))
SETTINGS_HOLDER_PREFIXES = ("omegaconf.", "hydra.")

# torch.<sub>.* namespaces whose calls do not return tensors
_NON_TENSOR_TORCH_PREFIXES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.utils.",
    "torch.optim.",
    "torch.jit.",
    "torch.onnx.",
    "torch.hub.",
    "torch.amp.",
    "torch.profiler.",
    "torch.multiprocessing.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.testing.",
    "torch.export.",
    "torch.fx.",
    "torch.package.",
    "torch.mps.",
    "torch.xpu.",
    "torch.autograd.profiler.",
)
_NON_TENSOR_TORCH_FUNCS = frozenset(
    """device dtype no_grad enable_grad inference_mode set_grad_enabled is_grad_enabled
    is_tensor is_storage is_floating_point is_complex is_nonzero numel manual_seed seed initial_seed
    save load get_default_dtype set_default_dtype set_default_device set_default_tensor_type compile
    Generator Size finfo iinfo set_float32_matmul_precision get_float32_matmul_precision
    use_deterministic_algorithms are_deterministic_algorithms_enabled set_printoptions
    set_num_threads get_num_threads set_num_interop_threads get_num_interop_threads
    get_rng_state set_rng_state set_anomaly_enabled is_anomaly_enabled autocast
    set_autocast_enabled is_autocast_enabled typename memory_format layout
    vmap func cond sym_int sym_float""".split()
)
# tensor methods whose result is not a tensor
NON_TENSOR_METHODS = frozenset(
    """item tolist numpy size dim ndimension numel nelement element_size data_ptr stride
    storage untyped_storage get_device is_contiguous is_floating_point is_complex
    backward register_hook retain_grad type_as_string __len__ is_pinned is_shared
    is_set_to equal allclose has_names storage_offset
    items keys""".split()  # (no Tensor has `items`/`keys`: what was taken for one is a mapping, a loss dict)
)
# tensor methods that give its sizes as Python ints (`x.size(0)`, `x.numel()`): no
# part of a batch, no device value to wait for
SIZE_METHODS = frozenset("size numel nelement dim ndimension element_size".split())
NON_TENSOR_ATTRS = frozenset(
    """shape device dtype is_cuda requires_grad ndim is_leaf layout names grad_fn is_sparse
    is_quantized is_meta output_nr""".split()
)
TENSOR_ATTRS = frozenset("grad data T mT H mH real imag".split())
# the counts a PyTorch Geometric `Data`/`Batch` gives as Python ints (`batch.num_graphs`,
# `data.num_nodes`), read from its tensors' shapes on the host
GRAPH_COUNT_ATTRS = frozenset("num_graphs num_nodes num_edges num_node_features num_edge_features num_features".split())
# a batch's key for what a dataset hands as text, which collation keeps a list of strings
# (`batch["name"]`, `batch["img_path"]`, `sample["caption"]`): no tensor
TEXT_KEY_RE = re.compile(
    r"^(?:.*_)?(?:names?|paths?|files?|filenames?|fnames?|captions?|texts?|prompts?|sentences?|titles?)$", re.I)


def is_text_key(subscript: ast.Subscript) -> bool:
    """`batch["name"]`: a string key `TEXT_KEY_RE` matches."""
    key = subscript.slice.value if isinstance(subscript.slice, ast.Constant) else None
    return isinstance(key, str) and TEXT_KEY_RE.match(key) is not None
# methods of a model that return the model itself
MODEL_SELF_METHODS = frozenset("to cuda cpu train eval half float double bfloat16 requires_grad_".split())
MODEL_TELL_METHODS = frozenset(
    "parameters named_parameters train eval state_dict load_state_dict modules named_modules".split()
)
# torch factories that build a tensor on the default (CPU) device unless given `device=`
HOST_FACTORIES = frozenset(
    """zeros ones empty full arange range linspace logspace eye rand randn randint randperm
    tensor from_numpy frombuffer from_file scalar_tensor""".split()
)
# names of functions that compute with a model (and so on its device)
MODEL_CODE_WORDS = ("forward", "backward", "step", "generate", "sample", "decode", "loss")
ITER_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "progress_bar", "track", "islice"})



# the kinds of torch's signature table (`torch_signatures`) that say what a
# value is; "other" (unannotated, Any, ...) says nothing and is not used
STUB_KINDS = {
    "tensor": TENSOR, "tensors": TENSOR, "number": NUMBER, "str": OTHER, "list": OTHER, "size": OTHER,
    "dtype": OTHER, "device": OTHER, "none": OTHER, "storage": OTHER, "generator": OTHER,
}


def stub_method_kind(method: str, call: Optional[ast.Call] = None) -> Optional[str]:
    """The kind a `Tensor` method returns, from torch's own stubs (by the
    number of positional arguments where overloads differ: `t.type()` is a
    string, `t.type(torch.half)` a tensor), or None where they do not say."""
    nargs = None
    if call is not None and not any(isinstance(a, ast.Starred) for a in call.args):
        nargs = len(call.args)
    return STUB_KINDS.get(tensor_method_kind(method, nargs) or "")


def stub_attribute_kind(attr: str) -> Optional[str]:
    """The kind of a `Tensor` attribute (`shape`, `device`, `nbytes`), from the stubs."""
    return STUB_KINDS.get(tensor_attribute_kind(attr) or "")


def is_tensor_returning_torch(q: str) -> bool:
    """`torch.<...>` returns a tensor: what torch's stubs say where they say
    it, else by the namespace and the name."""
    kind = STUB_KINDS.get(function_kind(q) or "")
    if kind is not None and q.rsplit(".", 1)[-1] not in DATA_PREDICATES:
        return kind == TENSOR
    return _by_name(q)


# torch functions that return a Python bool computed from the tensors' values:
# taking their truth value waits for the GPU as a tensor's does, so they are
# read as tensors (their stubs say bool)
DATA_PREDICATES = frozenset({"equal", "allclose", "is_nonzero"})


def _by_name(q: str) -> bool:
    if any(q.startswith(p) for p in _NON_TENSOR_TORCH_PREFIXES):
        return False
    parts = q.split(".")
    if len(parts) == 2:
        name = parts[1]
        if name in _NON_TENSOR_TORCH_FUNCS or name.startswith("_"):
            return False
        if name[:1].isupper():
            return name.endswith("Tensor")
        return name.islower() or "_" in name
    if parts[1] in ("linalg", "fft", "special", "sparse", "nested"):
        return True
    if parts[1] == "nn" and len(parts) >= 4 and parts[2] == "functional":
        return True
    if parts[1] == "nn" and parts[-1] in ("clip_grad_norm_", "get_total_norm", "parameters_to_vector"):
        return True  # torch.nn.utils.clip_grad_norm_ returns the total norm as a tensor
    if parts[1] == "autograd" and parts[-1] == "grad":
        return False
    return False


def kind_from_name(name: str) -> Optional[str]:
    if name in ("self", "cls"):
        return None
    name = name.lstrip("_")  # `self._optimizer`, `self._model` name the same things
    if not name:
        return None
    if NOT_MODEL_HINT_RE.search(name) or SETTINGS_SUFFIX_RE.search(name):
        return None
    if MODEL_NAME_RE.match(name):
        return MODEL
    if LOADER_NAME_RE.match(name):
        return LOADER
    if OPTIMIZER_NAME_RE.match(name):
        return OPTIMIZER
    if SCALER_NAME_RE.match(name):
        return SCALER
    if CRITERION_NAME_RE.match(name):
        return CRITERION
    if (
        LOSS_NAME_RE.match(name)
        and not LOSS_ACCUMULATOR_RE.match(name)
        and not LOSS_NOT_VALUE_RE.match(name)
        and not LOSS_HOLDER_SUFFIX_RE.search(name)
        and not LOSS_PREDICATE_RE.search(name)
    ):
        return TENSOR
    return None


def is_cpu_device(expr: ast.AST) -> bool:
    """`"cpu"`, `torch.device("cpu")`."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str) and expr.value.split(":")[0] == "cpu"
    if isinstance(expr, ast.Call) and (last_name(expr.func) or "") == "device" and expr.args:
        return is_cpu_device(expr.args[0])
    return False


def unwrap_iter(it: ast.AST):
    """enumerate(tqdm(loader)) -> (loader, 1 if enumerate was seen); also
    through `tqdm(loader) if verbose else loader`, whose branches wrap the
    same iterable."""
    skip = 0
    while True:
        if isinstance(it, ast.IfExp):
            body, s1 = unwrap_iter(it.body)
            orelse, s2 = unwrap_iter(it.orelse)
            if s1 != s2 or ast.dump(body) != ast.dump(orelse):
                break
            return body, skip or s1
        if not (isinstance(it, ast.Call) and it.args):
            break
        name = last_name(it.func) or ""
        if name == "enumerate":
            skip = 1
            it = it.args[0]
        elif name in ITER_WRAPPERS:
            it = it.args[0]
        else:
            break
    return it, skip


def is_sizes(value) -> bool:
    """`x.shape`, `x.shape[-2:]`, `x.size()`: a tensor's sizes, unpacked into
    Python ints (`N, _, H, W = imgs.shape`)."""
    while isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice):
        value = value.value
    if isinstance(value, ast.Attribute):
        return value.attr == "shape"
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size"
            and not value.args and not value.keywords)
