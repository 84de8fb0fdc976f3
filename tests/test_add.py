"""`opgen add`: a second op joins the package and its library, and the user's edits stay."""

from __future__ import annotations

import subprocess

import pytest
import yaml

RELU = ["--defaults", "--signature", "x: Tensor", "--forward", "x > 0 ? x : 0",
        "--reference", "torch.clamp(x, min=0)", "--gradients", "x: x > 0 ? grad : 0"]


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def project(opgen, tmp_path):
    assert opgen("new", "mylib", "--defaults").exit_code == 0
    return tmp_path / "mylib"


def test_an_added_op_gets_its_own_files_and_joins_the_library(opgen, project):
    before = tree(project)
    result = opgen("add", "relu", "--project", str(project), *RELU)
    assert result.exit_code == 0, result.output
    after = tree(project)
    assert sorted(set(after) - set(before)) == sorted([
        "csrc/relu.cpp", "csrc/relu_autograd.cpp", "csrc/relu_cpu_avx2.cpp", "csrc/relu_cpu_avx512.cpp",
        "csrc/relu_cpu_loops.h", "csrc/relu_kernel.cu", "csrc/relu_kernel.h",
        "csrc/relu_math.h", "mylib/relu.py", "mylib/relu_reference.py", "tests/test_relu.py",
        "benchmarks/bench_relu.py"])
    changed = sorted(name for name in before if before[name] != after[name])
    assert changed == [".copier-answers.yml", "README.md", "csrc/library.cpp", "mylib/__init__.py"]
    library = after["csrc/library.cpp"].decode()
    assert library.count("TORCH_LIBRARY(mylib, m)") == 1
    assert 'm.def("mylib(' in library and 'm.def("relu(Tensor x) -> Tensor");' in library
    assert "from .relu import relu" in after["mylib/__init__.py"].decode()
    assert "TORCH_LIBRARY_IMPL(mylib, CPU, m)" in after["csrc/relu.cpp"].decode()
    api = after["mylib/relu.py"].decode()
    assert "getattr(torch.ops.mylib, name)" in api and '_forward = _library_op("relu")' in api
    answers = yaml.safe_load(after[".copier-answers.yml"])
    assert [op["name"] for op in answers["ops"]] == ["mylib", "relu"]
    assert answers["_commit"] == yaml.safe_load(before[".copier-answers.yml"])["_commit"]
    # Another kind in the same package: a matmul.
    assert opgen("add", "mm", "--kind", "matmul", "--defaults", "-p", str(project)).exit_code == 0
    assert 'm.def("mm(Tensor a, Tensor b) -> Tensor");' in (project / "csrc" / "library.cpp").read_text()


def test_an_edited_shared_file_keeps_the_edit(opgen, project):
    init = project / "mylib" / "__init__.py"
    text = init.read_text()
    docstring_end = text.index('"""\n', 3) + 4
    init.write_text(text[:docstring_end] + "\nVERSION = '1.0'  # mine\n" + text[docstring_end:])
    assert opgen("add", "relu", "-p", str(project), *RELU).exit_code == 0
    text = init.read_text()
    assert "VERSION = '1.0'  # mine" in text and "from .relu import relu" in text


def test_an_edit_where_the_op_goes_is_a_conflict_with_markers(opgen, project):
    library = project / "csrc" / "library.cpp"
    line = '  m.def("mylib_backward(Tensor grad, float alpha) -> Tensor");\n'
    assert line in library.read_text()
    library.write_text(library.read_text().replace(line, line + '  m.def("mine(Tensor x) -> Tensor");\n'))
    result = opgen("add", "relu", "-p", str(project), *RELU)
    assert result.exit_code == 1
    assert "with conflicts in csrc/library.cpp; resolve the <<<<<<< markers" in result.output
    text = library.read_text()
    assert "<<<<<<< library.cpp (yours)" in text and 'm.def("mine(' in text and 'm.def("relu(' in text


@pytest.mark.parametrize("args, says", [
    (["mylib", "--defaults"], "already has an op named 'mylib'"),
    (["mylib_backward", "--defaults"], "no op may be named mylib_backward"),
    (["library", "--defaults"], "csrc/library.cpp"),
    (["mm", "--kind", "matmul", "--defaults", "--forward", "x"], "--forward 'x' does not apply"),
    (["Relu", "--defaults"], "lower snake case"),
    (["relu", "--defaults", "--signature", "x: Tensor"],
     "--signature 'x: Tensor' was given without --forward"),
    (["relu", "--defaults", "--signature", "x: Tensor", "--forward", "x"], "given without --gradients"),
])
def test_a_bad_op_is_refused_and_nothing_changes(opgen, project, args, says):
    before = tree(project)
    result = opgen("add", *args, "-p", str(project))
    assert result.exit_code == 2 and says in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert tree(project) == before


def test_an_existing_file_of_the_new_op_stops_everything(opgen, project):
    (project / "tests" / "test_relu.py").write_text("# mine\n")
    before = tree(project)
    result = opgen("add", "relu", "-p", str(project), *RELU)
    assert result.exit_code == 2 and "test_relu.py already exists" in result.output
    assert tree(project) == before


def test_add_finds_the_project_from_inside_it(opgen, project, monkeypatch):
    monkeypatch.chdir(project / "csrc")
    assert opgen("add", "relu", *RELU).exit_code == 0
    assert (project / "csrc" / "relu.cpp").is_file()


def test_add_needs_a_project_made_by_opgen(opgen, tmp_path):
    result = opgen("add", "relu", *RELU)
    assert result.exit_code == 2 and "is not inside a project made by opgen new" in result.output
    assert opgen("new", "nb", "--defaults", "--inline").exit_code == 0  # one file, no answers
    result = opgen("add", "relu", "-p", str(tmp_path / "nb"), *RELU)
    assert result.exit_code == 2 and "has no .copier-answers.yml" in result.output


def test_the_exact_setting_is_the_projects(opgen, tmp_path):
    assert opgen("new", "exactlib", "--defaults", "--exact", "--no-backward").exit_code == 0
    result = opgen("add", "mm", "--kind", "matmul", "--defaults", "-p", str(tmp_path / "exactlib"))
    assert result.exit_code == 2 and "matmul is not --exact" in result.output


def test_add_works_in_a_git_checkout_and_leaves_committing_to_the_user(opgen, project):
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v"]
    for args in (["init", "-q"], ["add", "-A"], commit):
        subprocess.run(["git", *args], cwd=project, check=True)
    assert opgen("add", "relu", "-p", str(project), *RELU).exit_code == 0
    status = subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True)
    assert "?? csrc/relu.cpp" in status.stdout and " M csrc/library.cpp" in status.stdout
