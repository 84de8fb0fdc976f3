"""The kinds of op opgen generates, one module each.

A kind module holds everything that is particular to its kind on the Python side: what
its answers default to, which options it takes, how they are checked, and what it adds
to the op's record. Its template files live in templates/kinds/<kind>/. Adding a kind
means a module here, its entry below and its template folder; no other kind changes.

Each module defines:
    NAME: the --kind value.
    SUMMARY: one line for --help and the question.
    DEFAULTS: the answers `--defaults` takes, as the command line spells them.
    OPTIONS: the kind-specific options it accepts (others are refused, not ignored).
    settle(answers, settle, params, given): ask or default its own questions (settle(key,
        default, help) asks on a terminal, else takes the default or leaves the key unset)
        and check them; `given` names the options the user gave. Returns the kind's
        fields of the op's record, as parsed there.
    options(record) -> dict: those fields as the command line spells them.
and may define:
    defaults(answers) -> dict: DEFAULTS chosen from the answers given so far (rowwise
        takes its preset's signature).
    NOT_INLINE: why `opgen new --inline` cannot hold an op of this kind.
    STABLE_ABI: True where templates/kinds/<kind>/stable/ holds its files for a project built
        on the stable ABI (opgen new --abi stable); other kinds are refused there.
    parse_signature(text) -> params, signature_text(params) -> text: a signature syntax of
        its own (custom: 'index: Tensor[int64, 1]'), in place of spec.parse_signature and
        spec.canonical_signature.
"""

from __future__ import annotations

from types import ModuleType

from . import custom, elementwise, matmul, pixel, rowwise

KINDS: dict[str, ModuleType] = {module.NAME: module
                                for module in (elementwise, pixel, matmul, rowwise, custom)}
# Options some kind takes; a kind that does not take one refuses it with its reason.
KIND_OPTIONS = frozenset().union(*(module.OPTIONS for module in KINDS.values()))
# The kinds whose files have a stable-ABI version (opgen new --abi stable), in KINDS' order.
STABLE_KINDS = [name for name, module in KINDS.items() if getattr(module, "STABLE_ABI", False)]
