"""The custom kind: its answers, its refusals, a built project whose tests catch wrong
kernels, and updates that never touch the user's three files.

One project of two custom ops is built once (a session fixture) and reused.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from opgen.answers import collect_op, options_of
from opgen.cli import main
from opgen.naming import MAX_LENGTH

from .conftest import (
    HAS_NVCC,
    assert_ruff_passes,
    failed_tests,
    long_name,
    pip_install,
    render,
    run_project_tests,
    tree,
)
from .test_update import (
    commit_as_generated,
    git,
    opgen_from_checkout,
    set_version,
    template_repo,  # noqa: F401  (a fixture)
)

# The module's tests share one built project (the fixture `built`): one worker builds it once.
pytestmark = pytest.mark.xdist_group("custom")

# A rule that gives a negative size for an empty index (as a segment op's offsets.size(0) - 1
# does): the generated tests must expect the op to refuse those inputs, as the reference does,
# not fail as generated.
GATHER = ["--kind", "custom", "--signature", "x: Tensor, index: Tensor[int64], scale: float = 1.0",
          "--returns", "out: (index.size(0) - 1, x.size(1))", "--gradients", "x"]
# Everything else the kind takes: three outputs (two of a dtype of their own, so not
# differentiable: one like a tensor, one given with its sizes), int and bool scalars, a
# bool tensor, a declared ndim, floor division, two tensors of the op's dtype that get
# gradients.
MIXED = ["--kind", "custom", "--signature",
         "a: Tensor[float, 2], b: Tensor, mask: Tensor[bool], n: int = 2, flip: bool = True, "
         "w: float = 0.5",
         "--returns", "y: (a.size(0) * n, b.size(-1) // 2 + 1); m: like mask; k: int64 (a.size(0),)",
         "--gradients", "a, b", "--dtypes", "float32,float64"]


def given(args: list[str]) -> dict:
    """The collect_op answers of command-line options."""
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    return {key[2:].replace("-", "_"): value for key, value in pairs.items()} | (
        {"dtypes": pairs["--dtypes"].split(",")} if "--dtypes" in pairs else {})


@pytest.mark.parametrize("args", [GATHER, MIXED, ["--kind", "custom"]], ids=["gather", "mixed", "default"])
def test_answers_read_back_the_same(args):
    record = collect_op("op", given(args))
    assert collect_op("op", options_of(record)) == record


def test_the_records_shapes_in_python_and_cpp():
    record = collect_op("op", given(MIXED))
    y, m, k = record["returns"]
    assert y["shape"] == ["a.size(0) * n", "b.size(-1) // 2 + 1"]
    assert y["shape_cpp"] == ["in.a.size(0) * s.n", "floor_divide(in.b.size(-1), 2) + 1"]
    # a has 2 dimensions by its type; b needs one for b.size(-1), checked at run time.
    assert y["dims"] == [{"tensor": "b", "dims": 1}]
    assert (m["like"], m["dtype"]) == ("mask", "bool")
    assert (k["shape"], k["dtype"], y["dtype"]) == (["a.size(0)"], "int64", None)
    assert record["backward"] and [g["input"] for g in record["gradients"]] == ["a", "b"]


SIG = "x: Tensor, index: Tensor[int64, 1], scale: float = 1.0"


@pytest.mark.parametrize(("args", "says"), [
    (["--signature", "x: Tensor, index: Tensor[int65]"], "'int65' is neither a dtype"),
    (["--signature", "x: Tensor, k: float[2]"], "only Tensor takes [dtype, ndim]"),
    (["--signature", "x: Tensor[float16]"], "--dtypes float16"),
    (["--signature", "x: Tensor[9]"], "Tensor[9] gives 9 dimensions; a tensor argument may have at most 8"),
    (["--signature", "x: Tensor[2, 3]"], "Tensor[2, 3] gives two numbers of dimensions; give one"),
    (["--signature", "x: Tensor[int64, float32]"], "two dtypes"),
    (["--signature", "i: Tensor[int64]"], "every tensor has a dtype of its own"),
    (["--signature", "x: Tensor, y: Tensor"], "without --returns"),
    (["--signature", SIG, "--returns", "out: index.size(0)"], "a tuple of sizes"),
    (["--signature", SIG, "--returns", "out: (q.size(0),)"], "reads 'q', which is not a tensor"),
    (["--signature", SIG, "--returns", "out: (index.size(1),)"], "reads dimension 1 of index, which has 1"),
    (["--signature", SIG, "--returns", "out: (scale,)"], "is a float argument, not an int"),
    (["--signature", SIG, "--returns", "out: (x,)"], "is a tensor; take one of its sizes"),
    (["--signature", SIG, "--returns", "out: (x.size(0) / 2,)"], "is not a size"),
    (["--signature", SIG, "--returns", "out: like q"], "'q' is not a tensor argument"),
    (["--signature", SIG, "--returns", "out: int65 (x.size(0),)"], "'int65' is not a dtype"),
    (["--signature", SIG, "--returns", "x: like x"], "'x' is already an argument"),
    (["--signature", SIG, "--returns", "class: like x"], "is a Python or C++ name"),
    (["--signature", SIG, "--returns", "out like x"], "needs the form 'name: like x'"),
    (["--signature", SIG, "--returns", "out: like x", "--gradients", "index"],
     "only tensors of the op's (floating) dtype get gradients"),
    (["--signature", SIG, "--returns", "out: like x", "--gradients", "q"], "'q' is not a tensor argument"),
    (["--signature", SIG, "--returns", "out: like index", "--gradients", "x"],
     "no output has the op's dtype"),
    (["--signature", "x: Tensor, grad_out: Tensor", "--returns", "out: like x", "--gradients", "x"],
     "'grad_out' is also the name of the backward op's gradient"),
    (["--signature", SIG, "--returns", "out: like x", "--gradients", "x", "--dtypes", "uint8"],
     "backward kernels need floating inputs"),
    (["--signature", "x: Tensor[float]", "--returns", "out: like x", "--dtypes", "uint8"],
     "floating dtypes only"),
    (["--reference", "x * 2"], "drop --reference"),
    (["--out-dtype", "float64"], "drop --out-dtype"),
    (["--forward", "x * 2"], "it is an option of --kind elementwise"),
])
def test_refusals_at_opgen_new_are_one_line_exit_2_and_write_nothing(opgen, tmp_path, args, says):
    before = tree(tmp_path)
    result = opgen("new", "my_op", "--defaults", "--kind", "custom", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("opgen: error: ") and says in lines[0], result.output
    # The message quotes the user's own answer.
    assert any(value in lines[0] for value in args[1::2]), lines[0]
    assert tree(tmp_path) == before


def test_user_files_are_listed_for_copier_to_skip(tmp_path):
    project = render(tmp_path, "lib", "--op", "gather", *GATHER)
    copier_yml = yaml.safe_load((Path(__file__).parent.parent / "copier.yml").read_text())
    skipped = [p.replace("{{ package }}", "lib") for p in copier_yml["_skip_if_exists"]]
    assert skipped == ["csrc/*_cuda.cuh", "csrc/*_cpu.h", "lib/_*_reference.py"]
    assert {"csrc/gather_cuda.cuh", "csrc/gather_cpu.h", "lib/_gather_reference.py"} <= {
        str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()}
    # A custom op has no generated reference beside the user's.
    assert not (project / "lib" / "gather_reference.py").exists()


@pytest.mark.parametrize(("length", "abi"), [(None, "torch"), (MAX_LENGTH, "torch"),
                                             (MAX_LENGTH, "stable")])
def test_generated_python_passes_ruff(tmp_path, length, abi):
    # Names as long as opgen takes too: ruff check finds nothing, ruff format changes nothing.
    def name(stem: str) -> str:
        return long_name(stem, length) if length else stem

    project = render(tmp_path, name("lib"), "--abi", abi, "--op", name("gather"), *GATHER)
    with pytest.raises(SystemExit) as exit_:
        main(["add", name("mixed"), "-p", str(project), "--defaults", *MIXED])
    assert exit_.value.code in (0, None)
    assert_ruff_passes(project)


# Session scope: a module fixture is torn down whenever the worker runs a test of another
# module in between, and was built twice a run (2 x 150-340 s on CI's machine).
@pytest.fixture(scope="session")
def built(python, projects) -> Path:
    """A project of two custom ops (gather, mixed), built once; CUDA compiled where nvcc is."""
    project = render(projects, "customs", "--op", "gather", *GATHER)
    with pytest.raises(SystemExit) as exit_:
        main(["add", "mixed", "-p", str(project), "--defaults", *MIXED])
    assert exit_.value.code in (0, None)
    log = pip_install(python, project, TORCH_CUDA_ARCH_LIST="9.0")  # one arch: compiling, not running
    if HAS_NVCC:
        assert "nvcc" in log and "gather_kernel.cu" in log
    return project


def test_the_generated_tests_pass_as_generated(python, built):
    result = run_project_tests(python, built, "-rs")
    assert result.returncode == 0, result.stdout[-4000:]
    assert " passed" in result.stdout
    # Where no GPU is visible, the CUDA tests say why they skip.
    if "skipped" in result.stdout:
        assert "needs a CUDA GPU, and none is visible" in result.stdout


def edit(path: Path, old: str, new: str) -> str:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))
    return text


def test_a_wrong_cpu_kernel_or_gradient_fails_the_generated_tests(python, built):
    # The user's CPU code, off by a little: the forward of gather, the gradient of mixed.
    forward, gradient = built / "csrc" / "gather_cpu.h", built / "csrc" / "mixed_cpu.h"
    kept = [(forward, edit(forward, "v = v * static_cast<A>(s.scale);",
                           "v = v * static_cast<A>(s.scale) * A(1.001);")),
            (gradient, edit(gradient, "g = g * static_cast<A>(s.w);",
                            "g = g * static_cast<A>(s.w) * A(1.01);"))]
    try:
        pip_install(python, built, TORCH_CUDA_ARCH_LIST="9.0")
        wrong_forward = run_project_tests(python, built, "tests/test_gather.py")
        assert wrong_forward.returncode == 1
        assert {"test_matches_reference", "test_non_contiguous_inputs"} <= failed_tests(wrong_forward.stdout)
        wrong_gradient = run_project_tests(python, built, "tests/test_mixed.py")
        assert wrong_gradient.returncode == 1
        assert {"test_gradients_match_reference", "test_gradcheck"} <= failed_tests(wrong_gradient.stdout)
        assert "test_matches_reference" not in failed_tests(wrong_gradient.stdout)
    finally:
        for path, text in kept:
            path.write_text(text)
        pip_install(python, built, TORCH_CUDA_ARCH_LIST="9.0")


def test_a_wrong_shape_rule_in_the_reference_fails_the_generated_tests(python, built):
    # The reference of another shape than the kernels': the tests compare shapes first.
    reference = built / "customs" / "_gather_reference.py"
    text = edit(reference, "shape = (index.size(0) - 1, x.size(1))",
                "shape = (index.size(0) - 1, x.size(1) + 1)")
    try:
        result = run_project_tests(python, built, "tests/test_gather.py", "-k", "matches_reference")
        assert result.returncode == 1 and "test_matches_reference" in failed_tests(result.stdout)
    finally:
        reference.write_text(text)


# ---- ownership: a template upgrade reaches the glue and never the user's files ------------

USER_FILES = ["csrc/gather_cuda.cuh", "csrc/gather_cpu.h", "gather/_gather_reference.py"]
GLUE_LINE = "// {{op_name}}_kernel.h: {{op_name}}'s arguments as your kernels receive them."


def release_v2_of_the_custom_templates(repo: Path) -> None:
    """v2 changes the glue (the kernel header) and the first versions of the user files."""
    kinds = repo / "templates" / "kinds" / "custom"
    header = kinds / "kernel.h.jinja"
    edit(header, GLUE_LINE, GLUE_LINE + " (template v2)")
    for name in ("cuda.cuh.jinja", "cpu.h.jinja", "user_reference.py.jinja"):
        path = kinds / name
        path.write_text(path.read_text().replace("YOURS", "YOURS (template v2)"))
    set_version(repo, "2.0.0")
    git(repo, "commit", "-qam", "template v2")
    git(repo, "tag", "v2.0.0")


def render_and_edit_like_a_user(repo: Path, where: Path) -> tuple[Path, dict[str, bytes]]:
    rendered = opgen_from_checkout(repo, "new", "gather", "--defaults", *GATHER, cwd=where)
    assert rendered.returncode == 0, rendered.stderr
    project = where / "gather"
    commit_as_generated(project)
    # The user's kernel, CPU code and reference: edited and committed.
    for name in USER_FILES[:2]:
        path = project / name
        path.write_text(path.read_text() + "// my kernel, not the template's\n")
    reference = project / USER_FILES[2]
    reference.write_text(reference.read_text() + "# my reference\n")
    git(project, "commit", "-qam", "my op")
    return project, {name: (project / name).read_bytes() for name in USER_FILES}


def assert_glue_updated_and_user_files_untouched(project: Path, mine: dict[str, bytes]) -> None:
    assert "(template v2)" in (project / "csrc" / "gather_kernel.h").read_text()
    for name, content in mine.items():
        assert (project / name).read_bytes() == content, name
    assert not git(project, "ls-files", "--unmerged")
    assert not list(project.rglob("*.rej"))
    assert yaml.safe_load((project / ".copier-answers.yml").read_text())["_commit"] == "v2.0.0"


def test_copier_update_brings_the_glue_and_keeps_the_users_files(template_repo, tmp_path):  # noqa: F811
    project, mine = render_and_edit_like_a_user(template_repo, tmp_path)
    release_v2_of_the_custom_templates(template_repo)
    result = subprocess.run([sys.executable, "-m", "copier", "update", "--defaults"], cwd=project,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert_glue_updated_and_user_files_untouched(project, mine)


def test_opgen_update_brings_the_glue_and_keeps_the_users_files(template_repo, tmp_path):  # noqa: F811
    project, mine = render_and_edit_like_a_user(template_repo, tmp_path)
    release_v2_of_the_custom_templates(template_repo)
    result = opgen_from_checkout(template_repo, "update", str(project), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert_glue_updated_and_user_files_untouched(project, mine)


def test_even_an_unedited_user_file_is_never_replaced(template_repo, tmp_path):  # noqa: F811
    # The user has not touched their kernel yet: it is still theirs, not the template's.
    rendered = opgen_from_checkout(template_repo, "new", "gather", "--defaults", *GATHER, cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    project = tmp_path / "gather"
    commit_as_generated(project)
    first = {name: (project / name).read_bytes() for name in USER_FILES}
    release_v2_of_the_custom_templates(template_repo)
    result = opgen_from_checkout(template_repo, "update", str(project), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert_glue_updated_and_user_files_untouched(project, first)


def test_update_without_skip_if_exists_would_merge_into_the_users_files(template_repo, tmp_path):  # noqa: F811
    # The ownership tests can fail: without copier.yml's _skip_if_exists, the same update
    # rewrites the user's (unedited) kernel with the template's v2.
    copier_yml = template_repo / "copier.yml"
    text = copier_yml.read_text()
    start = text.index("_skip_if_exists:")
    end = text.index("\n\n", start)
    copier_yml.write_text(text[:start] + text[end + 2:])
    git(template_repo, "commit", "-qam", "no skip")
    git(template_repo, "tag", "-f", "v1.0.0")
    rendered = opgen_from_checkout(template_repo, "new", "gather", "--defaults", *GATHER, cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    project = tmp_path / "gather"
    commit_as_generated(project)
    release_v2_of_the_custom_templates(template_repo)
    assert opgen_from_checkout(template_repo, "update", str(project), cwd=tmp_path).returncode == 0
    assert "YOURS (template v2)" in (project / "csrc" / "gather_cuda.cuh").read_text()


def test_regen_checks_a_custom_ops_glue_and_leaves_the_users_files(tmp_path):
    # reference_ops/embedding_bag: its three files are written by hand, the rest rendered.
    project = tmp_path / "embedding_bag"
    shutil.copytree(Path(__file__).parent.parent / "reference_ops" / "embedding_bag", project)
    glue, mine = project / "csrc" / "embedding_bag.cpp", project / "csrc" / "embedding_bag_cpu.h"
    rendered = edit(glue, "#include", "// a hand edit\n#include")
    edit(mine, "#pragma once", "#pragma once\n// more of mine")
    edited = mine.read_text()
    check = CliRunner().invoke(main, ["regen", "--check", str(project)])
    assert check.exit_code == 1
    assert f"{glue}: differs from the template" in check.output and str(mine) not in check.output
    assert CliRunner().invoke(main, ["regen", str(project)]).exit_code == 0
    assert glue.read_text() == rendered and mine.read_text() == edited


def test_questions_on_a_terminal_are_the_kinds_own(tmp_path, monkeypatch):
    # No out dtype question (a custom op's outputs take theirs from --returns, and any
    # other answer than 'same' is refused): the returns and gradients are asked instead.
    from opgen import cli

    monkeypatch.setattr(cli, "stdin_is_a_terminal", lambda: True)
    monkeypatch.chdir(tmp_path)
    answers = ["n", "custom", "values: Tensor, seg: Tensor[int64, 1], num: int = 4", "float32,float64",
               "y", "sums: (num, values.size(1)); counts: int64 (num,)", "values"]
    result = CliRunner().invoke(main, ["new", "seg_sum"], input="\n".join(answers) + "\n",
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    asked = [line.split(" (")[0] for line in result.output.splitlines() if "): " in line or "]: " in line]
    assert asked == ["exact", "kind", "signature", "dtypes", "backward", "returns", "gradients"]
    [op] = yaml.safe_load((tmp_path / "seg_sum" / ".copier-answers.yml").read_text())["ops"]
    assert [(o["name"], o["dtype"]) for o in op["returns"]] == [("sums", None), ("counts", "int64")]
    assert [g["input"] for g in op["gradients"]] == ["values"]
