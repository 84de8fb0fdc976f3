"""The opgen command line.

Start-up stays light: no torch, and copier is imported only by the commands that render.
Every refusal is one line on stderr, `opgen: error: ...`, with exit code 2.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from . import __version__
from .kinds import KINDS, rowwise
from .model import ABIS
from .naming import name_problem
from .spec import DTYPES, FLOAT_DTYPES, OUT_DTYPES, SpecError, check_dtypes, parse_dtypes

USAGE_ERROR = 2


def fail(message: str, code: int = USAGE_ERROR) -> None:
    click.echo(f"opgen: error: {message}", err=True)
    sys.exit(code)


class OneLineErrors(click.Group):
    """click's usage errors as one line, `opgen: error: ...`, exit code 2, like opgen's own."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as error:
            hint = f" (see: {error.ctx.command_path} --help)" if error.ctx else ""
            fail(error.format_message() + hint)
        except click.Abort:
            fail("interrupted; nothing was written", code=130)
        if standalone_mode:
            sys.exit(code or 0)
        return code


@click.group(cls=OneLineErrors,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", "-V", prog_name="opgen")
def main() -> None:
    """Scaffold complete custom PyTorch operator projects in CUDA.

    \b
    Example:
      opgen new my_op && cd my_op
      pip install --no-build-isolation -e . && pytest -q
      opgen update        # later, inside the project: take template upgrades
      opgen doctor        # what a build here would use, and what is wrong with it
    """


NEW_EPILOG = """\b
Examples:
  opgen new my_op                        # asks on a terminal, else takes the defaults
  opgen new my_op --defaults -o ops/     # y = alpha * x, every dtype, in ops/my_op
  opgen new fused_axpby --defaults --signature "a: float, x: Tensor, b: Tensor" \\
      --forward "a * x + b" --gradients "x: a * grad; b: grad"
  opgen new relu --defaults --signature "x: Tensor" --forward "x > 0 ? x : 0" \\
      --reference "torch.clamp(x, min=0)" --gradients "x: x > 0 ? grad : 0"
  opgen new normalize_volume --defaults --signature "vol: Tensor, max_val: float" \\
      --forward "vol / max_val" --dtypes uint16 --out-dtype float32 --exact --no-backward
  opgen new rgb_to_gray --defaults --kind pixel --signature "img: Tensor" --channels "r, g, b" \\
      --forward "0.299f * r + 0.587f * g + 0.114f * b" --dtypes uint8 --no-backward \\
      --reference "0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]" --exact
  opgen new rms_norm --defaults --kind rowwise --preset rmsnorm
  opgen new add_rms_norm --defaults --kind rowwise --preset add_rmsnorm
  opgen new l2_normalize --defaults --kind rowwise --signature "x: Tensor" \\
      --reductions "ss = sum(x * x)" --forward "x / sqrt(ss)" \\
      --reference "x / x.norm(dim=-1, keepdim=True)" \\
      --grad-reductions "gy = sum(grad * y)" --gradients "x: (grad - y * gy) / sqrt(ss)"
  opgen new my_gather --defaults --kind custom \\
      --signature "x: Tensor, index: Tensor[int64], scale: float = 1.0" \\
      --returns "out: (index.size(0), x.size(1))" --gradients x
"""


def op_options(command):
    """The options that describe one op: the same for opgen new and opgen add."""
    options = [
        click.option("--kind", type=click.Choice(list(KINDS)),
                     help="What the kernel computes: " + "; ".join(f"{name}: {kind.SUMMARY}"
                                                              for name, kind in KINDS.items()) + "."),
        click.option("--dtypes", metavar="LIST",
                     help=f"Comma-separated dtypes to support, from {','.join(DTYPES)} "
                          f"(default: {','.join(FLOAT_DTYPES)})."),
        click.option("--signature", metavar="ARGS",
                     help="Python arguments: tensors (they broadcast) and float, int or bool scalars, e.g. "
                          "'x: Tensor, alpha: float = 2.0'; custom ops' tensors may carry a dtype and "
                          "a number of dimensions, e.g. 'index: Tensor[int64, 1]'."),
        click.option("--forward", metavar="EXPR",
                     help="C++ expression for one output element, e.g. 'alpha * x'; rowwise ops with "
                          "several outputs: 'y: EXPR; h: EXPR'."),
        click.option("--reference", metavar="EXPR",
                     help="The op as a PyTorch expression, for the tests (default: --forward)."),
        click.option("--gradients", metavar="GRADS",
                     help="'input: C++ expression' for every tensor input, ';'-separated, using grad, "
                          "e.g. 'x: alpha * grad; mask: non_differentiable'. Custom ops: the tensors "
                          "that get gradients, e.g. 'x, weight'."),
        click.option("--channels", metavar="NAMES",
                     help="Pixel ops: the channels of the image's last dimension, e.g. 'r, g, b'."),
        click.option("--preset", type=click.Choice(list(rowwise.PRESETS)),
                     help="Rowwise ops: every formula of a known op, editable later."),
        click.option("--columns", metavar="NAMES",
                     help="Rowwise ops: the per-column tensors, shape (N,), e.g. 'weight, bias'."),
        click.option("--reductions", metavar="REDS",
                     help="Rowwise ops: per-row reductions, ';'-separated, each 'name = op(expression)' "
                          "with op sum, mean, max or min, e.g. 'm = max(x); z = sum(exp(x - m))'."),
        click.option("--grad-reductions", metavar="REDS",
                     help="Rowwise ops: the backward's per-row reductions, over grad and y (the output; "
                          "with several outputs grad_<output> and <output>), e.g. 'gy = sum(grad * y)'."),
        click.option("--returns", metavar="OUTS",
                     help="Custom ops: each output and its shape, ';'-separated, as 'like <tensor>' or "
                          "a tuple of sizes, e.g. 'out: (index.size(0), x.size(1)); mask: like x'."),
        click.option("--out-dtype", type=click.Choice(OUT_DTYPES),
                     help="The output's dtype (default: the inputs')."),
        click.option("--no-backward", is_flag=True, help="No backward kernels and no autograd."),
        click.option("--defaults", is_flag=True,
                     help="Ask nothing: unanswered questions take their defaults."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def given_answers(options: dict) -> dict:
    """The op's answers given as options, in collect_op's terms; refusals for contradictions."""
    if options["no_backward"] and options["gradients"] is not None:
        fail("--gradients and --no-backward contradict each other; drop one")
    given = {key: options[key] for key in ("kind", "signature", "forward", "reference", "gradients",
                                           "channels", "preset", "columns", "reductions",
                                           "grad_reductions", "returns", "out_dtype")
             if options[key] is not None}
    if options["dtypes"] is not None:
        given["dtypes"] = parse_dtypes(options["dtypes"])
        try:
            check_dtypes(given["dtypes"])
        except SpecError as error:
            fail(f"--{error}")
    if options["no_backward"]:
        given["backward"] = False
    return given


@main.command(epilog=NEW_EPILOG)
@click.argument("name")
@click.option("-o", "--output-dir", type=click.Path(path_type=Path), default=Path("."),
              show_default=True, help="Directory to create the project NAME in.")
@op_options
@click.option("--exact", is_flag=True,
              help="CPU and CUDA results must agree bit for bit (no fused multiply-adds on CUDA), "
                   "for every op of the project.")
@click.option("--abi", type=click.Choice(ABIS), default="torch", show_default=True,
              help="The C++ interface the library is built on: torch's own (loads only under the torch "
                   "it was built with) or the stable ABI (torch >= 2.10; one build loads under every "
                   "later torch).")
@click.option("--inline", is_flag=True,
              help="Write one Python file, NAME.py, built with load_inline (for notebooks).")
@click.option("--op", "op_name", metavar="OP",
              help="The first op's name, if not NAME (opgen add adds more).")
@click.option("--existing-ok", is_flag=True,
              help="Add the project's files to an existing non-empty directory (never overwrites a file).")
def new(name, output_dir, exact, abi, inline, op_name, existing_ok, **options):
    """Create the custom-op project NAME: kernels, torch binding, autograd, tests, benchmark.

    NAME is the Python package and the torch.ops namespace; its first op is NAME too,
    or --op's name. `opgen add` adds more ops to it. On a terminal, questions that no
    option answers are asked; with --defaults, or when stdin is not a terminal, their
    defaults are used.
    """
    problem = name_problem(name)
    if problem:
        fail(problem)
    given = given_answers(options)

    from .answers import collect_op
    from .model import project_record
    from .render import RenderError, render_project

    interactive = not options["defaults"] and stdin_is_a_terminal()
    target = output_dir / name
    try:
        if interactive and not exact:
            exact = ask_on_the_terminal("exact", False, "must CPU and CUDA agree bit for bit?")
        op = collect_op(op_name or name, given, exact=exact,
                        ask=ask_on_the_terminal if interactive else None)
        if inline:
            check_inlinable(op, abi)
        record = project_record(name, [op], exact=exact, abi=abi)
        render_project(target, record, existing_ok=existing_ok,
                       finish=inline_file(record) if inline else None)
    except (RenderError, SpecError) as error:
        fail(str(error))
    except (KeyboardInterrupt, click.Abort):
        fail("interrupted; nothing was written", code=130)
    click.echo(next_steps(target, name, inline))


ADD_EPILOG = """\b
Examples:
  opgen new mylib --defaults && cd mylib
  opgen add relu --defaults --signature "x: Tensor" --forward "x > 0 ? x : 0" \\
      --reference "torch.clamp(x, min=0)" --gradients "x: x > 0 ? grad : 0"
  opgen add mm --kind matmul --defaults
"""


@main.command(epilog=ADD_EPILOG)
@click.argument("name")
@click.option("-p", "--project", type=click.Path(path_type=Path),
              help="The project to add the op to (default: the one the current directory is in).")
@op_options
def add(name, project, **options):
    """Add the op NAME to a project made by opgen new (default: the one you are in).

    The op gets its own kernel, formulas, glue, Python API, tests and benchmark, and joins
    the package's library (torch.ops.PACKAGE.NAME). Files you edited take the new op by a
    three-way merge; where it overlaps your edits, they get <<<<<<< markers, opgen lists
    them and exits with status 1.
    """
    given = given_answers(options)

    from .add import AddError, add_op, current_project, enclosing_project
    from .answers import collect_op
    from .render import RenderError

    interactive = not options["defaults"] and stdin_is_a_terminal()
    try:
        project = project or enclosing_project(Path.cwd())
        current = current_project(project)
        _, record = current
        op = collect_op(name, given, exact=record["exact"], ask=ask_on_the_terminal if interactive else None)
        result = add_op(project, current, op)
    except (AddError, RenderError, SpecError) as error:
        fail(str(error))
    except (KeyboardInterrupt, click.Abort):
        fail("interrupted; nothing was written", code=130)
    if result.conflicts:
        fail(f"added {name} to {project}, with conflicts in {', '.join(result.conflicts)}; resolve the "
             "<<<<<<< markers, then rebuild", code=1)
    click.echo(f"Added {name} to {project}: {len(result.added)} new files"
               + (f"; {', '.join(result.changed)} updated" if result.changed else "")
               + f". Next: pip install --no-build-isolation -e . && pytest -q tests/test_{name}.py")


def check_inlinable(op: dict, abi: str) -> None:
    """Refuses --inline for a kind whose files one Python file cannot hold (NOT_INLINE says why)."""
    if abi == "stable":
        raise SpecError("--inline builds with torch's load_inline, which compiles against torch's own "
                        "headers, not the stable ABI; drop --inline or --abi stable")
    why = getattr(KINDS[op["kind"]], "NOT_INLINE", None)
    if why:
        raise SpecError(f"--inline is not available for {op['kind']} ops yet: {why}; drop --inline")


def inline_file(record: dict):
    """What turns a rendered project into the one file NAME.py of --inline."""
    from .inline import assemble
    from .template_source import template_root

    def finish(directory: Path) -> None:
        text = assemble(directory, record, template_root()[0])
        for path in sorted(directory.iterdir()):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        (directory / f"{record['package']}.py").write_text(text)

    return finish


def stdin_is_a_terminal() -> bool:
    return sys.stdin.isatty()


def ask_on_the_terminal(question: str, default, help_text: str):
    """Ask one question of `opgen new` on the terminal, showing its default."""
    label = f"{question.replace('_', ' ')} ({help_text})" if help_text else question
    if isinstance(default, bool):
        return click.confirm(label, default=default)
    if question == "kind":
        return click.prompt(label, default=default, type=click.Choice(list(KINDS)), show_choices=False)
    if question == "out_dtype":
        return click.prompt(label, default=default, type=click.Choice(["same", *OUT_DTYPES]),
                            show_choices=False)
    if isinstance(default, list):
        return click.prompt(label, default=",".join(default))
    return click.prompt(label, default=default) if default is not None else click.prompt(label)


def next_steps(target: Path, name: str, inline: bool) -> str:
    """What to run after `opgen new`, as it works from here: with what this Python lacks first."""
    lines = [f"Created {target}. Next:", f"  cd {target}"]
    missing = missing_build_packages()
    if missing:
        lines.append(f"  pip install {' '.join(missing)}    # not in this Python ({sys.executable}), "
                     "and the build needs them")
    lines.append(f"  python {name}.py" if inline else "  pip install --no-build-isolation -e . && pytest -q")
    return "\n".join(lines)


def missing_build_packages() -> list[str]:
    """What `pip install --no-build-isolation -e .` and pytest need that this Python lacks.

    Read from the installed packages' metadata: importing torch would take seconds.
    """
    from importlib.metadata import PackageNotFoundError, version

    def installed(package: str) -> str | None:
        try:
            return version(package)
        except PackageNotFoundError:
            return None

    missing = [package for package in ("torch", "ninja", "pytest") if installed(package) is None]
    setuptools = installed("setuptools")
    # setuptools builds wheels itself from 70.1 on; before, only with the wheel package.
    major_minor = tuple(int(part) for part in (setuptools or "0").split(".")[:2] if part.isdigit())
    if major_minor < (70, 1) and installed("wheel") is None:
        missing.append("'setuptools>=70.1'")
    return missing


REGEN_EPILOG = """\b
Examples:
  opgen regen reference_ops/*           # re-render after a template change
  opgen regen --check reference_ops/*   # CI: exit 1 and list every file that drifted
"""


@main.command(epilog=REGEN_EPILOG)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--check", is_flag=True, help="Change nothing; list files that differ and exit 1 if any do.")
def regen(paths, check):
    """Re-render generated projects from their recorded .copier-answers.yml."""
    from .regen import RegenError
    from .regen import regen as regen_project
    from .render import RenderError

    drifted = []
    for path in paths:
        try:
            drift = regen_project(path, check=check)
        except (RegenError, RenderError) as error:
            fail(f"{path}: {error}")
        if drift:
            drifted.append(path)
            for line in drift.lines():
                click.echo(line)
    if not check:
        click.echo(f"{len(drifted)} of {len(paths)} project(s) re-rendered")
    elif drifted:
        fail(f"{len(drifted)} of {len(paths)} project(s) differ from what the template renders; "
             "run opgen regen on them and commit the result", code=1)
    else:
        click.echo(f"{len(paths)} project(s) match the template")


UPDATE_EPILOG = """\b
Examples:
  cd my_op && git init -q && git add -A && git commit -m "my kernel"   # a clean git project
  opgen update                             # the project in the current directory
  opgen update path/to/my_op
"""


@main.command(epilog=UPDATE_EPILOG)
@click.argument("path", type=click.Path(path_type=Path), default=Path("."))
def update(path):
    """Bring template changes into the project at PATH (default: here), keeping your edits.

    Runs `copier update` to this opgen's template version. Where your edits and the
    template's changes overlap, the files get <<<<<<< markers; opgen lists them and exits
    with status 1: resolve them, `git add` and commit.
    """
    from .update import UpdateError, update_project

    try:
        result = update_project(path)
    except UpdateError as error:
        fail(str(error))
    except KeyboardInterrupt:
        fail("interrupted; undo what was changed with: git checkout -- . && git clean -fd", code=130)
    if result.conflicts:
        fail(f"updated {path} from {result.old_version} to {result.new_version} with conflicts in "
             f"{', '.join(result.conflicts)}; resolve the <<<<<<< markers, git add the files and commit",
             code=1)
    if result.old_version == result.new_version and not result.changed:
        click.echo(f"{path} is already at template {result.new_version}; nothing to update.")
        return
    click.echo(f"Updated {path} from {result.old_version} to {result.new_version}; review with "
               "git diff, then commit.")


DOCTOR_EPILOG = """\b
Examples:
  opgen doctor                  # this machine: torch, nvcc, CUDA_HOME, ninja, compiler, GPUs
  opgen doctor my_op            # and whether my_op's build matches the installed torch
  opgen doctor --json | jq .    # the same as a JSON object
"""


@main.command(epilog=DOCTOR_EPILOG)
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of a table.")
@click.option("--python", metavar="PYTHON", type=click.Path(exists=True, dir_okay=False),
              help="The Python that builds the project, if not the one running opgen.")
def doctor(path, as_json, python):
    """Check that this machine can build custom CUDA ops, and that PATH's build is current.

    Each check is ok, warning, error or missing, with its fix. Exits with status 1 when
    any check is an error (a build or an import would fail), 0 otherwise.
    """
    from .doctor import DoctorError, diagnose

    try:
        report = diagnose(path, python)
    except DoctorError as error:
        fail(str(error))
    click.echo(report.as_json() if as_json else report.as_text())
    sys.exit(report.exit_code)


if __name__ == "__main__":
    main()
