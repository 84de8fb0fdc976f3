"""Run by `opgen doctor` as a script in the Python that builds: what it and its torch are.

It prints two lines, OPGEN-PYTHON and OPGEN-TORCH, each with a JSON object, so that a
crash while importing torch (a segfault in a CUDA library) still leaves what was learnt
before it. It imports nothing but the standard library and torch, and keeps to old syntax:
the interpreter it runs in may have neither opgen nor its dependencies, and may be too old
for opgen, which doctor can only say if this file runs there.
"""

import json
import os
import sys
import sysconfig


def arch_names():
    """torch's named arch groups, [name, archs] in the order torch expands them.

    torch keeps them in a table local to _get_cuda_arch_flags, with no API to ask, so the
    table is read from its source: it is then always the one of the torch that builds.
    Reading rather than importing torch.utils.cpp_extension spares importing setuptools.
    """
    import ast
    import importlib.util

    with open(importlib.util.find_spec("torch.utils.cpp_extension").origin, "rb") as file:
        module = ast.parse(file.read())
    function = next(node for node in module.body
                    if isinstance(node, ast.FunctionDef) and node.name == "_get_cuda_arch_flags")
    for node in (node for node in ast.walk(function) if isinstance(node, ast.Assign)):
        if [getattr(target, "id", None) for target in node.targets] == ["named_arches"]:
            table = node.value
            if isinstance(table, ast.Call):  # collections.OrderedDict([(name, archs), ...])
                table = table.args[0]
            table = ast.literal_eval(table)
            pairs = table.items() if isinstance(table, dict) else table
            return [[str(name), str(archs)] for name, archs in pairs]
    raise LookupError("_get_cuda_arch_flags has no named_arches")


def main():
    info = {"python": sys.version.split()[0], "executable": sys.executable,
            "cxx": sysconfig.get_config_var("CXX") or "", "scripts": sysconfig.get_path("scripts")}
    print("OPGEN-PYTHON " + json.dumps(info), flush=True)
    info = {}
    try:
        import torch
    except BaseException as error:
        info["torch_error"] = (type(error).__name__ + ": " + str(error)).splitlines()[0]
    else:
        info["torch"] = torch.__version__
        info["torch_cuda"] = torch.version.cuda
        try:
            info["gpus"] = [{"name": torch.cuda.get_device_name(i),
                             "capability": "%d.%d" % torch.cuda.get_device_capability(i)}  # noqa: UP031
                            for i in range(torch.cuda.device_count())]
        except Exception as error:
            info["gpu_error"] = (type(error).__name__ + ": " + str(error)).splitlines()[0]
        try:  # the libstdc++ torch loaded, which opgen projects name on their link line
            with open("/proc/self/maps") as maps:
                info["libstdcxx"] = next(line.split(None, 5)[5].strip() for line in maps
                                         if line.rsplit("/", 1)[-1].startswith("libstdc++.so"))
        except Exception:
            pass
        try:  # private, so any failure leaves them unknown, which doctor reports
            info["arch_names"] = arch_names()
        except Exception:
            pass
        if os.environ.get("TORCH_CUDA_ARCH_LIST") and torch.version.cuda:
            try:  # torch's own verdict on the list; private, so any other failure is ignored
                from torch.utils.cpp_extension import _get_cuda_arch_flags
                _get_cuda_arch_flags()
            except ValueError as error:
                info["arch_error"] = str(error).splitlines()[0]
            except Exception:
                pass
    print("OPGEN-TORCH " + json.dumps(info), flush=True)


if __name__ == "__main__":
    # A script's directory goes first on sys.path, where doctor's own modules (report.py,
    # gpus.py, ...) would shadow any top-level module of those names that torch imports;
    # the working directory takes its place, so torch is found as `python -c 'import torch'`
    # run here finds it.
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) == here:
        sys.path[0] = ""
    main()
