"""What an op name may be.

The name becomes a Python package, a C++ namespace, a TORCH_LIBRARY namespace
(torch.ops.NAME) and a directory, so it must be valid and harmless as all four.
"""

from __future__ import annotations

import keyword
import re
import sys

# ASCII only: unicode look-alikes (a Cyrillic "а" in "mаtmul") would make a package
# that cannot be told from another by eye.
_LOWER_SNAKE_CASE = re.compile(r"[a-z][a-z0-9_]*")
MAX_LENGTH = 64

CPP_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq
    """.split())

# Packages a custom-op project is likely to import next to itself, and namespaces that
# torch.ops already holds or uses: an op named after one of them would shadow it.
COMMON_PACKAGES = frozenset("""
    torch torchvision torchaudio torchtext triton functorch numpy scipy pandas sympy
    networkx jax jaxlib tensorflow keras cupy numba sklearn transformers accelerate
    safetensors einops matplotlib PIL cv2 yaml requests packaging setuptools pip wheel
    pkg_resources ninja pybind11 pytest click copier jinja2 markupsafe filelock fsspec
    typing_extensions six opgen tests test benchmarks csrc build dist
    aten prim prims c10 c10d cuda cudnn quantized mkldnn higher_order inductor profiler
    load_library import_module
    """.split())

# Modules at the root of every generated project. An editable install puts that directory on
# sys.path (pyproject.toml says why), so a package of the same name installed after another
# project would import that project's module instead: `from setup import setup` ran the other
# project's setup.py, which exited with "error: no commands supplied".
PROJECT_MODULES = frozenset({"setup"})

# Functions that the C library's and CUDA's headers declare in the global namespace (every
# generated .cu file includes them): a C++ namespace of the same name does not compile
# ("norm" has already been declared in the current scope).
C_AND_CUDA_FUNCTIONS = frozenset("""
    abs acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh div erf erfc exp
    exp2 expm1 fabs fdim floor fma fmax fmin fmod frexp hypot ilogb labs ldexp lgamma llabs
    llrint llround log log10 log1p log2 logb lrint lround modf nan nearbyint nextafter
    nexttoward pow remainder remquo rint round scalbln scalbn sin sinh sqrt tan tanh tgamma
    trunc signbit isfinite isinf isnan
    norm normf norm3d norm4d rnorm rnorm3d rnorm4d rhypot rsqrt rcbrt sincos sincospi sinpi
    cospi erfinv erfcinv erfcx normcdf normcdfinv j0 j1 jn y0 y1 yn cyl_bessel_i0
    cyl_bessel_i1 exp10 min max umin umax llmin llmax ullmin ullmax saturate mul24 umul24
    mulhi umulhi mul64hi umul64hi
    malloc free calloc realloc memcpy memset printf abort exit rand srand clock time index
    """.split())


def name_problem(name: str) -> str | None:
    """Why `name` cannot be an op name, or None if it can."""
    if not name:
        return "the op name is empty; give a lower snake-case name such as my_op"
    if not name.isascii():
        return (f"op name {name!r} has non-ASCII characters; use only a-z, 0-9 and _ "
                "(look-alike letters make packages that cannot be told apart)")
    if "/" in name or "\\" in name or name in (".", ".."):
        return f"op name {name!r} is a path; give a bare name and put the directory in --output-dir"
    if not _LOWER_SNAKE_CASE.fullmatch(name):
        return (f"op name {name!r} is not lower snake case; use a-z, 0-9 and _, starting "
                f"with a letter, e.g. {_suggest(name)}")
    if "__" in name:
        return f"op name {name!r} has a double underscore, which C++ reserves; use single ones"
    if len(name) > MAX_LENGTH:
        return f"op name {name!r} is longer than {MAX_LENGTH} characters; shorten it"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return f"op name {name!r} is a Python keyword; pick another name, e.g. {name}_op"
    if name in CPP_KEYWORDS:
        return f"op name {name!r} is a C++ keyword; pick another name, e.g. {name}_op"
    if name in C_AND_CUDA_FUNCTIONS:
        return (f"op name {name!r} is a function of the C library or CUDA ({name}()), which the C++ "
                f"namespace of the op would collide with; pick another name, e.g. {name}_op")
    if name in PROJECT_MODULES:
        return (f"op name {name!r} is the module of every generated project's {name}.py, which an "
                f"editable install puts on sys.path, so another project's would be imported in "
                f"its place; pick another name, e.g. {name}_op")
    if name in sys.stdlib_module_names:
        return (f"op name {name!r} would shadow the standard library module {name}; "
                f"pick another name, e.g. {name}_op")
    if name in COMMON_PACKAGES:
        return f"op name {name!r} would shadow the package or namespace {name}; pick another, e.g. {name}_op"
    return None


def _suggest(name: str) -> str:
    """A lower snake-case spelling of `name`, for the error message."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    snake = re.sub(r"[^a-z0-9]+", "_", snake.lower()).strip("_")
    if not snake or not snake[0].isalpha():
        snake = "my_op" if not snake else f"op_{snake}"
    return snake
