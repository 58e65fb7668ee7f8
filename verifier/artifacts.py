"""Loading a built shared object into a process: what a candidate's `load_inline` returns."""

from __future__ import annotations

import types

import torch


def load_artifact(description: dict, path: str):
    """`description` (kind, name, functions, namespace) of a shared object at `path`, loaded: a Python
    extension module (torch's own build) or a namespace of dispatcher ops (the fast path)."""
    if description["kind"] == "module":
        import importlib.util

        spec = importlib.util.spec_from_file_location(description["name"], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    torch.ops.load_library(path)
    ops = getattr(torch.ops, description["namespace"])
    module = types.SimpleNamespace(**{f: getattr(ops, f) for f in description["functions"]})
    module.__name__ = description["name"]
    return module
