"""What a function's code reads and writes, found in its bytecode: the places behind its globals, closure and ``self``.

:func:`code_facts` runs a small symbolic interpretation of the code's stack: every value loaded from
a global, a local (an argument such as ``self``, or a closed-over cell) is tracked as a *path* from
that root, through attributes (``self.memory.items``) and subscripts (``CONFIG["prefix"]``, written
``[]`` whatever the key). Reading such a value records its path; storing into it records a write:

- ``self.calls = n``, ``self.calls += 1``, ``del self.cache`` write ``self.calls`` / ``self.cache``;
- ``CONFIG["x"] = v``, ``CALLS[key] += 1``, ``del MEMO[key]``, ``LOG[1:] = []`` write ``CONFIG[]``...;
- ``global CALLS; CALLS = ...`` and ``nonlocal seen; seen = ...`` write the name itself.

A method called on a value is a read of ``path.method`` (``LOG.append`` is read as ``("LOG", "append")``):
whether it changes the value depends on what the value is, which only the caller knows.

It sees what the code does to its roots directly or through a local alias (``log = self.log``); it does
not follow values passed to other functions, and a value whose place it loses (a jump, an
instruction it does not model) becomes unknown, which can only hide a write, never invent one.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["GLOBAL", "LOCAL", "SUBSCRIPT", "CodeFacts", "Path", "code_facts", "under"]

GLOBAL: Final = "global"
LOCAL: Final = "local"
SUBSCRIPT: Final = "[]"
"""Stands for any key or index in a path: ``CONFIG["a"]`` and ``CONFIG[key]`` are both ``CONFIG[]``."""

Path = tuple[str, ...]
"""``(GLOBAL | LOCAL, name, attribute or SUBSCRIPT, ...)``."""

_LOAD_LOCAL: Final = frozenset(
    {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_CLASSDEREF"}
)
_PURE_PUSH: Final = frozenset(
    {"LOAD_CONST", "LOAD_SMALL_INT", "LOAD_NAME", "LOAD_ASSERTION_ERROR", "LOAD_BUILD_CLASS", "PUSH_NULL"}
)
_NO_STACK: Final = frozenset(
    {
        "NOP",
        "RESUME",
        "PRECALL",
        "KW_NAMES",
        "EXTENDED_ARG",
        "CACHE",
        "MAKE_CELL",
        "COPY_FREE_VARS",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "JUMP",
        "JUMP_NO_INTERRUPT",
        "NOT_TAKEN",
    }
)
_ENDS_BLOCK: Final = frozenset(
    {
        "RETURN_VALUE",
        "RETURN_CONST",
        "RAISE_VARARGS",
        "RERAISE",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "JUMP",
        "JUMP_NO_INTERRUPT",
    }
)
_JUMPS: Final = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


@dataclass(frozen=True, slots=True)
class CodeFacts:
    """The paths a code object (with the code nested in it) reads and writes."""

    reads: frozenset[Path]
    writes: frozenset[Path]

    def global_names(self) -> frozenset[str]:
        """The globals read or written."""
        return frozenset(path[1] for path in self.reads | self.writes if path[0] == GLOBAL)


def under(paths: frozenset[Path], root: Path) -> frozenset[Path]:
    """The paths below ``root``, relative to it (``()`` for ``root`` itself)."""
    size = len(root)
    return frozenset(path[size:] for path in paths if path[:size] == root)


@functools.lru_cache(maxsize=16384)
def code_facts(code: types.CodeType) -> CodeFacts:
    """What ``code`` and the functions, lambdas and comprehensions defined in it read and write.

    A nested code's paths count when they start at a global or at a variable of the enclosing code
    (one of the nested code's free variables); its own locals are its business. Cached: equal code
    has equal facts, and reading bytecode is most of the time a code hash takes.
    """
    reads: set[Path] = set()
    writes: set[Path] = set()
    _Interpreter(code, reads, writes).run()
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            nested = code_facts(constant)
            shared = frozenset(constant.co_freevars)
            reads.update(path for path in nested.reads if _is_shared(path, shared))
            writes.update(path for path in nested.writes if _is_shared(path, shared))
    return CodeFacts(frozenset(reads), frozenset(writes))


def _is_shared(path: Path, free: frozenset[str]) -> bool:
    return path[0] == GLOBAL or path[1] in free


_Value = Path | None


class _Interpreter:
    """One linear pass over the instructions, keeping the path of each stack entry (``None``: not a place)."""

    def __init__(self, code: types.CodeType, reads: set[Path], writes: set[Path]) -> None:
        self._code = code
        self._reads = reads
        self._writes = writes
        self._stack: list[_Value] = []
        self._aliases: dict[str, Path] = {}
        self._depth_at: dict[int, int] = dict(_handler_depths(code))

    def run(self) -> None:
        reachable = True
        for instruction in dis.get_instructions(self._code):
            known = self._depth_at.get(instruction.offset)
            if known is not None and (not reachable or known != len(self._stack)):
                # Where paths meet, the stack's contents are known only when both agree on its depth.
                self._stack = [None] * known
            elif not reachable:
                self._stack = []
            self._step(instruction)
            reachable = instruction.opname not in _ENDS_BLOCK

    def _push(self, value: _Value) -> None:
        self._stack.append(value)

    def _pop(self) -> _Value:
        return self._stack.pop() if self._stack else None

    def _step(self, instruction: dis.Instruction) -> None:
        if instruction.opcode in _JUMPS and isinstance(instruction.argval, int):
            self._note_jump(instruction)
        name = instruction.opname
        if name in _NO_STACK:
            return
        handler = _HANDLERS.get(name)
        if handler is None:
            self._unknown(instruction)
        else:
            handler(self, instruction)

    def _pure_push(self, instruction: dis.Instruction) -> None:
        self._push(None)

    def _load_global(self, instruction: dis.Instruction) -> None:
        self._stack.extend([None] * (_effect(instruction) - 1))
        self._push(self._read((GLOBAL, instruction.argval)))

    def _load_local(self, instruction: dis.Instruction) -> None:
        names = instruction.argval if isinstance(instruction.argval, tuple) else (instruction.argval,)
        for local in names:
            self._push(self._local(local))

    def _load_attribute(self, instruction: dis.Instruction) -> None:
        owner = self._pop()
        self._stack.extend([None] * _effect(instruction))
        self._push(self._read(owner + (instruction.argval,)) if owner is not None else None)

    def _load_item(self, instruction: dis.Instruction) -> None:
        self._pop()
        owner = self._pop()
        self._push(self._read(owner + (SUBSCRIPT,)) if owner is not None else None)

    def _store_item(self, instruction: dis.Instruction) -> None:
        """``container[key] = value`` (and ``del``, and slices): the container is written."""
        name = instruction.opname
        for _ in range(2 if name in ("STORE_SLICE", "DELETE_SLICE") else 1):
            self._pop()
        container = self._pop()
        if name in ("STORE_SUBSCR", "STORE_SLICE"):
            self._pop()
        if container is not None:
            self._writes.add(container + (SUBSCRIPT,))

    def _store_attribute(self, instruction: dis.Instruction) -> None:
        owner = self._pop()
        if instruction.opname == "STORE_ATTR":
            self._pop()
        if owner is not None:
            self._writes.add(owner + (instruction.argval,))

    def _store_global(self, instruction: dis.Instruction) -> None:
        if instruction.opname == "STORE_GLOBAL":
            self._pop()
        self._writes.add((GLOBAL, instruction.argval))

    def _store_cell(self, instruction: dis.Instruction) -> None:
        if instruction.opname == "STORE_DEREF":
            self._pop()
        self._writes.add((LOCAL, instruction.argval))
        self._aliases.pop(instruction.argval, None)

    def _store_local(self, instruction: dis.Instruction) -> None:
        if isinstance(instruction.argval, str):
            self._alias(instruction.argval, self._pop())
        else:
            self._unknown(instruction)

    def _copy(self, instruction: dis.Instruction) -> None:
        depth = instruction.argval
        self._push(self._stack[-depth] if len(self._stack) >= depth else None)

    def _swap(self, instruction: dis.Instruction) -> None:
        depth = instruction.argval
        if len(self._stack) >= depth:
            self._stack[-1], self._stack[-depth] = self._stack[-depth], self._stack[-1]

    def _pop_top(self, instruction: dis.Instruction) -> None:
        self._pop()

    def _unknown(self, instruction: dis.Instruction) -> None:
        """An instruction not modelled: what it may have consumed and what it pushes are unknown values.

        It takes at least what its net effect removes, and one more value is replaced in case it read
        it (a call, an operator, ``GET_ITER``): a lost place can only hide a write.
        """
        effect = _effect(instruction)
        taken = min(len(self._stack), max(-effect, 0) + 1)
        del self._stack[len(self._stack) - taken :]
        self._stack.extend([None] * max(taken + effect, 0))

    def _note_jump(self, instruction: dis.Instruction) -> None:
        try:
            effect = dis.stack_effect(instruction.opcode, instruction.arg, jump=True)
        except ValueError:
            return
        self._depth_at.setdefault(instruction.argval, max(len(self._stack) + effect, 0))

    def _read(self, path: Path) -> Path:
        self._reads.add(path)
        return path

    def _local(self, name: object) -> _Value:
        if not isinstance(name, str):
            return None
        return self._read(self._aliases.get(name, (LOCAL, name)))

    def _alias(self, local: str, value: _Value) -> None:
        if value is not None and value != (LOCAL, local):
            self._aliases[local] = value
        else:
            self._aliases.pop(local, None)


_Handler = Callable[[_Interpreter, dis.Instruction], None]
_HANDLERS: Final[dict[str, _Handler]] = {
    **dict.fromkeys(_PURE_PUSH, _Interpreter._pure_push),
    "LOAD_GLOBAL": _Interpreter._load_global,
    **dict.fromkeys(_LOAD_LOCAL | {"LOAD_FAST_LOAD_FAST"}, _Interpreter._load_local),
    "LOAD_ATTR": _Interpreter._load_attribute,
    "LOAD_METHOD": _Interpreter._load_attribute,
    "BINARY_SUBSCR": _Interpreter._load_item,
    **dict.fromkeys(("STORE_SUBSCR", "DELETE_SUBSCR", "STORE_SLICE", "DELETE_SLICE"), _Interpreter._store_item),
    "STORE_ATTR": _Interpreter._store_attribute,
    "DELETE_ATTR": _Interpreter._store_attribute,
    "STORE_GLOBAL": _Interpreter._store_global,
    "DELETE_GLOBAL": _Interpreter._store_global,
    "STORE_DEREF": _Interpreter._store_cell,
    "DELETE_DEREF": _Interpreter._store_cell,
    "STORE_FAST": _Interpreter._store_local,
    "COPY": _Interpreter._copy,
    "SWAP": _Interpreter._swap,
    "POP_TOP": _Interpreter._pop_top,
}
"""What each modelled instruction does to the stack; any other is :meth:`_Interpreter._unknown`."""


def _effect(instruction: dis.Instruction) -> int:
    try:
        return dis.stack_effect(instruction.opcode, instruction.arg, jump=False)
    except ValueError:
        return 0


def _handler_depths(code: types.CodeType) -> dict[int, int]:
    """The stack depth at the start of each exception handler (the exception pushed, and the last offset if kept)."""
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:
        return {}
    try:
        entries = parse(code)
    except Exception:  # a private helper: without it handlers start from an unknown stack
        return {}
    return {entry.target: entry.depth + int(entry.lasti) + 1 for entry in entries}
