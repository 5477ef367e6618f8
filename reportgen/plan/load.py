"""Load plan.yaml with safe_load, validate it whole and report every error as `file:line: key: message`."""

from __future__ import annotations

import copy
import difflib
import hashlib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from reportgen.boundary import NotRegular, read_file
from reportgen.bounded import TooComplex, compose_yaml, construct_yaml
from reportgen.errors import PlanError
from reportgen.plan.schema import (  # KeyPath is schema's; importable from here too
    HUMAN_RESOURCE,
    MACHINE_RESOURCES,
    KeyPath,
    Plan,
    format_key,
    gpu_names,
)
from reportgen.recall import Recall, digest, each


@dataclass(frozen=True)
class LoadedPlan:
    """A validated plan with the exact bytes it came from and where each key was written."""

    plan: Plan
    path: Path
    text: str
    sha256: str
    lines: dict[KeyPath, int] = field(repr=False)

    def line_of(self, path: KeyPath) -> int | None:
        return line_of(self.lines, path)



def line_of(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    """Line of the deepest key of `path` that was written in the file."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def _map_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], duplicates: list[tuple[KeyPath, int]]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            child = path + (key,)
            if key in seen:
                duplicates.append((child, key_node.start_mark.line + 1))
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _map_lines(value_node, child, lines, duplicates)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = path + (index,)
            lines[child] = item.start_mark.line + 1
            _map_lines(item, child, lines, duplicates)


MAX_PLAN_BYTES = 4 << 20  # a plan is a page or two of YAML


def _read_text(path: Path) -> tuple[bytes, str]:
    try:
        read = read_file(path, MAX_PLAN_BYTES)  # a pipe or a device is refused, never waited on
    except FileNotFoundError:
        raise PlanError(str(path), [f"{path}: no such file"]) from None
    except NotRegular:
        what = "is a folder" if path.is_dir() else "not a regular file"
        raise PlanError(str(path), [f"{path}: {what}; give the plan file (plan.yaml)"]) from None
    except OSError as exc:
        raise PlanError(str(path), [f"{path}: cannot be read: {exc.strerror}"]) from None
    if not read.whole:
        raise PlanError(str(path), [f"{path}: {read.size:,} bytes; a plan is YAML text of at most {MAX_PLAN_BYTES >> 20} MB"])
    raw = read.data
    if b"\0" in raw:
        raise PlanError(str(path), [f"{path}: not a text file (binary content); a plan is YAML text"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PlanError(str(path), [f"{path}:{line}: not valid UTF-8 text (byte {exc.start}); save the plan as UTF-8"]) from None
    return raw, text


def _parse_yaml(path: Path, text: str) -> tuple[object, dict[KeyPath, int]]:
    try:
        root = compose_yaml(text)
        data = construct_yaml(root)
    except TooComplex as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise PlanError(str(path), [f"{where}: {exc.message}; a plan is refused"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise PlanError(str(path), [f"{where}: YAML syntax error: {problem}"]) from None
    lines: dict[KeyPath, int] = {(): 1}  # a key missing at the top level points at the start
    duplicates: list[tuple[KeyPath, int]] = []
    if root is not None:
        _map_lines(root, (), lines, duplicates)
    if duplicates:
        raise PlanError(
            str(path),
            [f"{path}:{line}: {format_key(key)}: key written twice; keep one" for key, line in duplicates],
        )
    return data, lines


def _model_at(model: type[BaseModel], path: KeyPath) -> type[BaseModel] | None:
    """The plan section model found by following `path` from `model`."""
    current: object = model
    for part in path:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)) or part not in current.model_fields:
            return None
        current = _unwrap(current.model_fields[part].annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: object) -> object:
    """list[X], X | None -> X, so that nested sections can be found."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple):
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if arg is not type(None):
                return _unwrap(arg)
    return annotation


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return "valid keys here: " + ", ".join(choices)


def _schema_errors(path: Path, lines: dict[KeyPath, int], exc: ValidationError) -> list[tuple[int, str]]:
    messages = []
    for error in exc.errors(include_url=False):
        loc: KeyPath = tuple(error["loc"])
        line = line_of(lines, loc)
        where = f"{path}:{line}" if line else str(path)
        key = format_key(loc)
        kind = error["type"]
        if kind == "extra_forbidden":
            parent = _model_at(Plan, loc[:-1])
            fields = list(parent.model_fields) if parent else []
            detail = f"unknown key; {_suggest(str(loc[-1]), fields)}"
        elif kind == "missing":
            parent = _model_at(Plan, loc[:-1])
            field = parent.model_fields.get(str(loc[-1])) if parent else None
            about = f": {field.description}" if field is not None and field.description else ""
            detail = f"required key is missing; add it{about}"
        elif kind == "timezone_aware":
            detail = f"needs a time zone, e.g. 2026-11-02T09:00:00+09:00 (got {error.get('input')!s})"
        else:
            value = error.get("input")
            shown = f" (got {value!r})" if isinstance(value, (str, int, float, bool)) or value is None else ""
            detail = f"{error['msg']}{shown}"
        messages.append((line or 0, f"{where}: {key}: {detail}"))
    return messages


def _items(data: object, *keys: str) -> list[tuple[int, dict]]:
    """(index, mapping) of the list at data[keys...], skipping anything of the wrong shape."""
    node = data
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, list):
        return []
    return [(index, item) for index, item in enumerate(node) if isinstance(item, dict)]


def _ids(items: list[tuple[int, dict]]) -> list[str]:
    return [item["id"] for _, item in items if isinstance(item.get("id"), str)]


def _gpu_names(data: dict) -> list[str]:
    """GPU names as Plan.gpu_names() gives them, from raw data of any shape."""
    lots = []
    for _, lot in _items(data, "order", "lots"):
        given, count = lot.get("gpu_names"), lot.get("gpus", 1)
        names = [str(name) for name in given] if isinstance(given, list) else None
        lots.append((count if isinstance(count, int) and 0 < count < 1000 else 1, names))
    return gpu_names(lots)


def _cross_errors(data: dict) -> list[tuple[KeyPath, str]]:
    """Rules between fields (unique ids, references, resources, currencies).

    They read the raw data defensively, so they are reported together with the field errors
    instead of only after those are fixed.
    """
    errors: list[tuple[KeyPath, str]] = []
    variants = _items(data, "variants")
    steps = _items(data, "schedule", "steps")
    step_ids, variant_ids = _ids(steps), _ids(variants)

    def unique(path: KeyPath, items: list[tuple[int, dict]]) -> None:
        seen: set[str] = set()
        for index, item in items:
            value = item.get("id")
            if isinstance(value, str) and value in seen:
                errors.append((path + (index, "id"), f"'{value}' is used twice; ids must be unique"))
            seen.add(value)

    def known(path: KeyPath, value: object, choices: list[str], what: str) -> None:
        if isinstance(value, str) and value not in choices:
            close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else f"the plan's {what}s are: {', '.join(choices) or 'none'}"
            errors.append((path, f"unknown {what} '{value}'; {hint}"))

    for section in ("variants", "stop_rules", "decision_points", "deliverables"):
        unique((section,), _items(data, section))
    unique(("schedule", "steps"), steps)

    order = data.get("order") if isinstance(data.get("order"), dict) else {}
    currency = order.get("currency", "USD")
    for index, lot in _items(data, "order", "lots"):
        names, count = lot.get("gpu_names"), lot.get("gpus", 1)
        if isinstance(names, list) and isinstance(count, int) and len(names) != count:
            errors.append((("order", "lots", index, "gpu_names"), f"names {len(names)} GPUs but the lot holds gpus: {count}"))
    for section in ("lots", "other_costs"):
        for index, item in _items(data, "order", section):
            own = item.get("currency")
            if isinstance(own, str) and isinstance(currency, str) and own != currency:
                errors.append(
                    (("order", section, index, "currency"),
                     f"{own} differs from the order's {currency}; reportgen never converts currencies")
                )
    gpu_names = _gpu_names(data)
    seen_gpus: set[str] = set()
    for name in gpu_names:
        if name in seen_gpus or name in MACHINE_RESOURCES or name == HUMAN_RESOURCE:
            errors.append((("order", "lots"), f"GPU name '{name}' is used twice or is reserved"))
        seen_gpus.add(name)

    for index, step in steps:
        base: KeyPath = ("schedule", "steps", index)
        resource = step.get("resource")
        if isinstance(resource, str) and resource not in (*MACHINE_RESOURCES, HUMAN_RESOURCE, *gpu_names):
            close = difflib.get_close_matches(resource, gpu_names, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'? " if close else ""
            errors.append(
                (base + ("resource",),
                 f"unknown GPU '{resource}'; {hint}the plan's GPUs are: {', '.join(gpu_names)} (other resources: cpu, human)")
            )
        depends = step.get("depends_on")
        for dep_index, dep in enumerate(depends if isinstance(depends, list) else []):
            if dep == step.get("id"):
                errors.append((base + ("depends_on", dep_index), "a step cannot depend on itself"))
            else:
                known(base + ("depends_on", dep_index), dep, step_ids, "step")
        known(base + ("variant",), step.get("variant"), variant_ids, "variant")

    cycle = _find_cycle(steps)
    if cycle:
        errors.append((("schedule", "steps", step_ids.index(cycle[0]), "depends_on"), "dependency cycle: " + " -> ".join(cycle)))

    for index, point in _items(data, "decision_points"):
        known(("decision_points", index, "after"), point.get("after"), step_ids, "step")
    for index, deliverable in _items(data, "deliverables"):
        known(("deliverables", index, "variant"), deliverable.get("variant"), variant_ids, "variant")
    for index, rule in _items(data, "stop_rules"):
        listed = rule.get("variants")
        for v_index, variant in enumerate(listed if isinstance(listed, list) else []):
            known(("stop_rules", index, "variants", v_index), variant, variant_ids, "variant")
    return errors


def _find_cycle(steps: list[tuple[int, dict]]) -> list[str] | None:
    depends: dict[str, list[str]] = {}
    for _, step in steps:
        if isinstance(step.get("id"), str):
            listed = step.get("depends_on")
            depends[step["id"]] = [d for d in (listed if isinstance(listed, list) else []) if isinstance(d, str)]
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> list[str] | None:
        if node in trail:
            return trail[trail.index(node):] + [node]
        if node in done or node not in depends:
            return None
        for dep in depends[node]:
            found = visit(dep, trail + [node])
            if found:
                return found
        done.add(node)
        return None

    for step_id in depends:
        found = visit(step_id, [])
        if found:
            return found
    return None


def load_plan(path: str | Path, recall: Recall | None = None) -> LoadedPlan:
    """Read and validate a plan; raise PlanError listing every problem with its line. With `recall` (held by the
    watcher), the YAML of a plan unchanged since the last build is not parsed again."""
    path = Path(path)
    raw, text = _read_text(path)
    return parse_plan(path, raw, text, recall)


def parse_plan(path: Path, raw: bytes, text: str, recall: Recall | None = None) -> LoadedPlan:
    try:
        return _parse_plan(path, raw, text, recall)
    except RecursionError:
        raise PlanError(str(path), [f"{path}: nested too deeply to be a plan"]) from None


def _parse_plan(path: Path, raw: bytes, text: str, recall: Recall | None) -> LoadedPlan:
    parsed = each(recall, "plan", [text], lambda text: digest(str(path), text),
                  lambda texts: [_parse_yaml(path, text) for text in texts])[0]
    data, lines = copy.deepcopy(parsed) if recall is not None else parsed  # what is recalled is never changed
    if not isinstance(data, dict):
        raise PlanError(str(path), [f"{path}:1: the plan must be a mapping of sections (campaign, corpus, ...)"])
    errors: list[tuple[int, str]] = []
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        plan = None
        errors.extend(_schema_errors(path, lines, exc))
    for key, message in _cross_errors(data):
        line = line_of(lines, key) or 1
        errors.append((line, f"{path}:{line}: {format_key(key)}: {message}"))
    if errors or plan is None:
        ordered = sorted(dict.fromkeys(errors), key=lambda item: item[0])
        raise PlanError(str(path), [message for _, message in ordered])
    return LoadedPlan(plan=plan, path=path, text=text, sha256=hashlib.sha256(raw).hexdigest(), lines=lines)
