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

A module the code imports (``import config``, ``from config import PROMPT``, ``from . import cfg``) is
a root of its own, ``(MODULE, "config")`` (a relative name keeps its leading dots), read below as
attributes. ``getattr(x, "name")`` and ``setattr(x, "name", v)`` read and write ``x.name``; a name
known only at run time (``getattr(config, name)``, ``vars(config)``) reads ``x.*`` (:data:`ANY`), and
``globals()`` reads the global ``*``: the caller says what it cannot see.

It sees what the code does to its roots directly or through a local alias (``log = self.log``); it does
not follow values passed to other functions, and a value whose place it loses (a jump, an
instruction it does not model) becomes unknown, which can only hide a write, never invent one. How
many values each instruction takes and leaves is Python's own :func:`dis.stack_effect`, so that the
stack stays right on every Python version's bytecode; only the instructions that move places
(loads, stores, imports, ``COPY``/``SWAP``) are modelled.
"""

from __future__ import annotations

import dis
import functools
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["ANY", "GLOBAL", "LOCAL", "MODULE", "SUBSCRIPT", "CodeFacts", "Path", "code_facts", "under"]

GLOBAL: Final = "global"
LOCAL: Final = "local"
MODULE: Final = "module"
"""The root of a module the code imports: ``(MODULE, "config", "PROMPT")``; ``(MODULE, ".cfg")`` is relative."""
SUBSCRIPT: Final = "[]"
"""Stands for any key or index in a path: ``CONFIG["a"]`` and ``CONFIG[key]`` are both ``CONFIG[]``."""
ANY: Final = "*"
"""Stands for an attribute or global whose name is known only at run time (``getattr(x, name)``, ``globals()``)."""

Path = tuple[str, ...]
"""``(GLOBAL | LOCAL | MODULE, name, attribute or SUBSCRIPT, ...)``."""

_LOAD_CELL: Final = frozenset({"LOAD_DEREF", "LOAD_CLOSURE", "LOAD_CLASSDEREF"})
_PURE_PUSH: Final = frozenset({"LOAD_NAME", "LOAD_ASSERTION_ERROR", "LOAD_BUILD_CLASS", "PUSH_NULL"})
_STILL: Final = frozenset(
    {
        "NOP",
        "RESUME",
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
"""Instructions that leave the stack as it is, when Python says their effect is none (``PRECALL`` is not one)."""
_CALLS: Final = frozenset({"PRECALL", "CALL"})
"""Where a call's callable and arguments are on the stack (3.11 has ``PRECALL`` then ``CALL``; later, ``CALL``)."""
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
    return path[0] != LOCAL or path[1] in free


@dataclass(frozen=True, slots=True)
class _Constant:
    """A constant on the stack (an attribute's name for ``getattr``, an import's level)."""

    value: object


_Value = Path | _Constant | None


class _Interpreter:
    """One linear pass over the instructions, keeping the path of each stack entry (``None``: not a place)."""

    def __init__(self, code: types.CodeType, reads: set[Path], writes: set[Path]) -> None:
        self._code = code
        self._reads = reads
        self._writes = writes
        self._stack: list[_Value] = []
        self._aliases: dict[str, Path] = {}
        self._stack_at: dict[int, list[_Value]] = {
            offset: [None] * depth for offset, depth in _handler_depths(code).items()
        }
        """The stack a jump (or an exception) arrives with at an offset."""

    def run(self) -> None:
        reachable = True
        for instruction in dis.get_instructions(self._code):
            arriving = self._stack_at.get(instruction.offset)
            if arriving is not None:
                self._stack = list(arriving) if not reachable else _merged(arriving, self._stack)
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
        if name in _STILL and _effect(instruction) == 0:
            return
        if name.startswith(("POP_JUMP", "JUMP_IF")):
            # A conditional jump reads only the condition it pops (or keeps, when it jumps).
            del self._stack[max(len(self._stack) + min(_effect(instruction), 0), 0) :]
            return
        handler = _handler(instruction)
        if handler is None:
            self._unknown(instruction)
            return
        before = len(self._stack)
        handler(self, instruction)
        expected = before + _effect(instruction)
        if len(self._stack) != expected and expected >= 0:
            # The instruction does not do what it is modelled as doing (another Python version's): nothing is known.
            self._stack = [None] * expected

    def _pure_push(self, instruction: dis.Instruction) -> None:
        self._stack.extend([None] * _effect(instruction))

    def _load_constant(self, instruction: dis.Instruction) -> None:
        self._push(_Constant(instruction.argval))

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
        self._push(self._read(owner + (instruction.argval,)) if isinstance(owner, tuple) else None)

    def _load_item(self, instruction: dis.Instruction) -> None:
        self._pop()
        owner = self._pop()
        self._push(self._read(owner + (SUBSCRIPT,)) if isinstance(owner, tuple) else None)

    def _binary_operation(self, instruction: dis.Instruction) -> None:
        """``BINARY_OP``: an item's load where subscripting is one of its operations (3.14), else unknown."""
        if instruction.argrepr == SUBSCRIPT:
            self._load_item(instruction)
        else:
            self._unknown(instruction)

    def _store_item(self, instruction: dis.Instruction) -> None:
        """``container[key] = value`` (and ``del``, and slices): the container is written."""
        name = instruction.opname
        for _ in range(2 if name in ("STORE_SLICE", "DELETE_SLICE") else 1):
            self._pop()
        container = self._pop()
        if name in ("STORE_SUBSCR", "STORE_SLICE"):
            self._pop()
        if isinstance(container, tuple):
            self._writes.add(container + (SUBSCRIPT,))

    def _store_attribute(self, instruction: dis.Instruction) -> None:
        owner = self._pop()
        if instruction.opname == "STORE_ATTR":
            self._pop()
        if isinstance(owner, tuple):
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
        """``STORE_FAST`` and its fused forms (3.13): each local named takes the next value, a load follows."""
        names = instruction.argval if isinstance(instruction.argval, tuple) else (instruction.argval,)
        if instruction.opname == "STORE_FAST_LOAD_FAST":
            self._alias(names[0], self._pop())
            self._push(self._local(names[1]))
            return
        for local in names:
            self._alias(local, self._pop())

    def _delete_local(self, instruction: dis.Instruction) -> None:
        self._alias(instruction.argval, None)

    def _import_module(self, instruction: dis.Instruction) -> None:
        """``import a.b`` leaves the package ``a``, ``from a.b import c`` and ``import a.b as x`` the module itself."""
        names = self._pop()
        level = self._pop()
        name = instruction.argval
        if not isinstance(name, str) or not isinstance(level, _Constant) or not isinstance(names, _Constant):
            self._push(None)
            return
        if names.value is None and not (isinstance(level.value, int) and level.value):
            name = name.partition(".")[0]
        dots = "." * level.value if isinstance(level.value, int) else ""
        self._push(self._read((MODULE, dots + name)))

    def _import_from(self, instruction: dis.Instruction) -> None:
        module = self._stack[-1] if self._stack else None
        self._push(self._read(module + (instruction.argval,)) if isinstance(module, tuple) else None)

    def _call(self, instruction: dis.Instruction) -> None:
        """A call: ``getattr``, ``setattr``, ``vars`` and ``globals`` read or write what they name; then unknown."""
        count = instruction.arg or 0
        if len(self._stack) >= count + 2:
            arguments = self._stack[len(self._stack) - count :]
            # 3.11 and 3.12 keep the callable above its NULL; 3.13 below.
            for callable_ in self._stack[-count - 2 : len(self._stack) - count]:
                if isinstance(callable_, tuple) and len(callable_) == 2 and callable_[0] == GLOBAL:
                    self._builtin_call(callable_[1], arguments)
        self._unknown(instruction)

    def _builtin_call(self, function: str, arguments: list[_Value]) -> None:
        if function == "globals" and not arguments:
            self._reads.add((GLOBAL, ANY))
            return
        if not arguments or not isinstance(arguments[0], tuple):
            return
        target = arguments[0]
        if function == "vars" and len(arguments) == 1:
            self._reads.add(target + (ANY,))
            return
        if function not in ("getattr", "setattr", "delattr", "hasattr") or len(arguments) < 2:
            return
        name = arguments[1]
        path = target + (name.value if isinstance(name, _Constant) and isinstance(name.value, str) else ANY,)
        (self._writes if function in ("setattr", "delattr") else self._reads).add(path)

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
        kept = len(self._stack) + min(effect, 0)
        jumping = self._stack[: max(kept, 0)] + [None] * max(effect, 0)
        arrived = self._stack_at.get(instruction.argval)
        self._stack_at[instruction.argval] = jumping if arrived is None else _merged(arrived, jumping)

    def _read(self, path: Path) -> Path:
        self._reads.add(path)
        return path

    def _local(self, name: object) -> _Value:
        if not isinstance(name, str):
            return None
        return self._read(self._aliases.get(name, (LOCAL, name)))

    def _alias(self, local: object, value: _Value) -> None:
        if not isinstance(local, str):
            return
        if isinstance(value, tuple) and value != (LOCAL, local):
            self._aliases[local] = value
        else:
            self._aliases.pop(local, None)


_Handler = Callable[[_Interpreter, dis.Instruction], None]
_HANDLERS: Final[dict[str, _Handler]] = {
    **dict.fromkeys(_PURE_PUSH, _Interpreter._pure_push),
    "LOAD_CONST": _Interpreter._load_constant,
    "LOAD_SMALL_INT": _Interpreter._load_constant,
    "LOAD_GLOBAL": _Interpreter._load_global,
    **dict.fromkeys(_LOAD_CELL, _Interpreter._load_local),
    "LOAD_ATTR": _Interpreter._load_attribute,
    "LOAD_METHOD": _Interpreter._load_attribute,
    "BINARY_SUBSCR": _Interpreter._load_item,
    "BINARY_OP": _Interpreter._binary_operation,
    **dict.fromkeys(("STORE_SUBSCR", "DELETE_SUBSCR", "STORE_SLICE", "DELETE_SLICE"), _Interpreter._store_item),
    "STORE_ATTR": _Interpreter._store_attribute,
    "DELETE_ATTR": _Interpreter._store_attribute,
    "STORE_GLOBAL": _Interpreter._store_global,
    "DELETE_GLOBAL": _Interpreter._store_global,
    "STORE_DEREF": _Interpreter._store_cell,
    "DELETE_DEREF": _Interpreter._store_cell,
    "DELETE_FAST": _Interpreter._delete_local,
    "IMPORT_NAME": _Interpreter._import_module,
    "IMPORT_FROM": _Interpreter._import_from,
    **dict.fromkeys(_CALLS, _Interpreter._call),
    "COPY": _Interpreter._copy,
    "SWAP": _Interpreter._swap,
    "POP_TOP": _Interpreter._pop_top,
}
"""What each modelled instruction does to the stack; any other is :meth:`_Interpreter._unknown`."""


def _handler(instruction: dis.Instruction) -> _Handler | None:
    """The instruction's handler; the families of fused local loads and stores are named by their prefix.

    ``LOAD_FAST``, ``LOAD_FAST_CHECK``, ``LOAD_FAST_AND_CLEAR``, ``LOAD_FAST_LOAD_FAST`` (3.13),
    ``LOAD_FAST_BORROW`` (3.14) push locals; ``STORE_FAST``, ``STORE_FAST_MAYBE_NULL``,
    ``STORE_FAST_STORE_FAST`` and ``STORE_FAST_LOAD_FAST`` (3.13) store them.
    """
    name = instruction.opname
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler
    if name.startswith("LOAD_FAST"):
        return _Interpreter._load_local
    if name.startswith("STORE_FAST"):
        return _Interpreter._store_local
    return None


def _merged(stack: list[_Value], other: list[_Value]) -> list[_Value]:
    """Where two paths meet: what both agree on is known; with different depths, the first's depth, nothing known."""
    if len(stack) != len(other):
        return [None] * len(stack)
    return [value if value == another else None for value, another in zip(stack, other, strict=True)]


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
