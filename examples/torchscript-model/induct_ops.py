"""The operator a scripted model calls at its hook points: torch.ops.induct.hook(name, x).

Import this module before torch.jit.script so that scripting finds the operator. In Python it
returns x itself; inside induct it shows x to the study that asked (probes record it, ablation
and patching replace it with a tensor of the same shape). Hook names are the host's: "embed",
"block.i" / "<layer>.i" from 0, "norm" (docs/plugin-guide.md).
"""
import torch

_library = torch.library.Library("induct", "DEF")
_library.define("hook(str name, Tensor x) -> Tensor")
_library.impl("hook", lambda name, x: x, "CompositeImplicitAutograd")
