"""Look inside a torch.save file (a Lightning .ckpt) without unpickling it.

A checkpoint from the logs is untrusted: unpickling it can run any code. Instead the pickle's
opcodes are walked with `pickletools.genops` (which only decodes them) by a small stack machine
that builds plain data only: dicts, lists, tuples, strings, numbers, booleans and None. Anything
else (tensors, classes, functions) becomes an `Opaque` with the name of the callable it would have
called, and nothing is imported or called. `collections.OrderedDict` is read as a dict.
"""

from __future__ import annotations

import io
import pickletools
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from reportgen.boundary import open_file

MAX_PICKLE_BYTES = 64 << 20


@dataclass
class Opaque:
    """An object the pickle would have built by calling `name`; its contents are not interpreted."""

    name: str
    items: dict = field(default_factory=dict)


class _Mark:
    pass


_MARK = _Mark()
_DICT_BUILDERS = {"collections OrderedDict", "builtins dict", "collections defaultdict"}


class UnreadablePickle(ValueError):
    pass


def _pop_mark(stack: list) -> list:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is _MARK:
            items = stack[i + 1:]
            del stack[i:]
            return items
    raise UnreadablePickle("MARK missing")


def _set_items(target, pairs: list) -> None:
    store = target.items if isinstance(target, Opaque) else target
    if not isinstance(store, dict):
        return
    for key, value in zip(pairs[::2], pairs[1::2]):
        try:
            store[key] = value
        except TypeError:  # unhashable key: leave it out
            pass


def scan(data: bytes):
    """The data a pickle holds, with every object that needs code replaced by an Opaque."""
    stack: list = []
    memo: dict = {}
    for op, arg, _pos in pickletools.genops(io.BytesIO(data)):
        name = op.name
        if name in ("PROTO", "FRAME"):
            continue
        if name == "STOP":
            break
        if name == "MARK":
            stack.append(_MARK)
        elif name in ("EMPTY_DICT",):
            stack.append({})
        elif name in ("EMPTY_LIST",):
            stack.append([])
        elif name == "EMPTY_TUPLE":
            stack.append(())
        elif name in ("EMPTY_SET",):
            stack.append([])
        elif name in ("BININT", "BININT1", "BININT2", "LONG1", "LONG4", "INT", "LONG", "BINFLOAT", "FLOAT",
                      "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
                      "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"):
            stack.append(arg)
        elif name == "NONE":
            stack.append(None)
        elif name == "NEWTRUE":
            stack.append(True)
        elif name == "NEWFALSE":
            stack.append(False)
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            n = int(name[-1])
            items = tuple(stack[-n:])
            del stack[-n:]
            stack.append(items)
        elif name == "TUPLE":
            stack.append(tuple(_pop_mark(stack)))
        elif name == "LIST":
            stack.append(_pop_mark(stack))
        elif name == "DICT":
            items = _pop_mark(stack)
            d: dict = {}
            _set_items(d, items)
            stack.append(d)
        elif name == "FROZENSET":
            stack.append(_pop_mark(stack))
        elif name == "APPEND":
            value = stack.pop()
            if isinstance(stack[-1], list):
                stack[-1].append(value)
        elif name in ("APPENDS", "ADDITEMS"):
            items = _pop_mark(stack)
            if isinstance(stack[-1], list):
                stack[-1].extend(items)
        elif name == "SETITEM":
            value = stack.pop()
            key = stack.pop()
            _set_items(stack[-1], [key, value])
        elif name == "SETITEMS":
            items = _pop_mark(stack)  # before reading the target under the mark
            _set_items(stack[-1], items)
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = stack[-1]
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            if arg not in memo:
                raise UnreadablePickle(f"memo {arg} used before it is set")
            stack.append(memo[arg])
        elif name == "GLOBAL":
            stack.append(Opaque(str(arg)))
        elif name == "STACK_GLOBAL":
            attr = stack.pop()
            module = stack.pop()
            stack.append(Opaque(f"{module} {attr}"))
        elif name in ("REDUCE", "NEWOBJ"):
            _args = stack.pop()
            func = stack.pop()
            func_name = func.name if isinstance(func, Opaque) else "?"
            stack.append({} if func_name in _DICT_BUILDERS else Opaque(func_name))
        elif name == "NEWOBJ_EX":
            del stack[-3:]
            stack.append(Opaque("object"))
        elif name in ("OBJ", "INST"):
            _pop_mark(stack)
            stack.append(Opaque(str(arg) if arg else "object"))
        elif name == "BUILD":
            stack.pop()  # an object's state is not interpreted
        elif name in ("BINPERSID", "PERSID"):
            if name == "BINPERSID":
                stack.pop()
            stack.append(Opaque("storage"))
        elif name == "POP":
            stack.pop()
        elif name == "POP_MARK":
            _pop_mark(stack)
        elif name == "DUP":
            stack.append(stack[-1])
        elif name in ("EXT1", "EXT2", "EXT4", "NEXT_BUFFER", "READONLY_BUFFER"):
            stack.append(Opaque(name))
        else:
            raise UnreadablePickle(f"unsupported pickle opcode {name}")
    if len(stack) != 1:
        raise UnreadablePickle("the pickle does not end with one object")
    return stack[0]


def read_torch_file(path: Path):
    """The top-level object of a torch.save zip file (its data.pkl), without running the pickle."""
    try:
        with open_file(path) as handle, zipfile.ZipFile(handle) as archive:
            pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if not pickles:
                raise UnreadablePickle("a zip file without data.pkl; not a torch.save file")
            member = archive.getinfo(pickles[0])
            if member.file_size > MAX_PICKLE_BYTES:
                raise UnreadablePickle(f"data.pkl is {member.file_size} bytes; larger than reportgen reads")
            data = archive.read(member)
    except zipfile.BadZipFile as exc:
        raise UnreadablePickle(f"not a readable zip archive ({exc}); cut off or damaged") from exc
    except (RuntimeError, NotImplementedError) as exc:  # zipfile: an encrypted member, a compression it lacks
        raise UnreadablePickle(f"its data.pkl cannot be read ({exc}); torch.save writes neither") from exc
    except (OSError, EOFError, ValueError) as exc:
        raise UnreadablePickle(f"cannot be read ({exc})") from exc
    try:
        return scan(data)
    except (ValueError, IndexError, EOFError) as exc:
        raise UnreadablePickle(f"damaged pickle ({exc})") from exc
