"""Load plan.yaml with safe_load, validate it whole and report every error as `file:line: key: message`."""

from __future__ import annotations

import difflib
import hashlib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from reportgen.errors import PlanError
from reportgen.plan.schema import HUMAN_RESOURCE, MACHINE_RESOURCES, Plan

KeyPath = tuple[str | int, ...]


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


def format_key(path: KeyPath) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


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


def _read_text(path: Path) -> tuple[bytes, str]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PlanError(str(path), [f"{path}: no such file"]) from None
    except IsADirectoryError:
        raise PlanError(str(path), [f"{path}: is a folder; give the plan file (plan.yaml)"]) from None
    except OSError as exc:
        raise PlanError(str(path), [f"{path}: cannot be read: {exc.strerror}"]) from None
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
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
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


def _schema_errors(path: Path, lines: dict[KeyPath, int], exc: ValidationError) -> list[str]:
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
            detail = "required key is missing"
        else:
            value = error.get("input")
            shown = f" (got {value!r})" if isinstance(value, (str, int, float, bool)) or value is None else ""
            detail = f"{error['msg']}{shown}"
        messages.append((line or 0, f"{where}: {key}: {detail}"))
    return [message for _, message in sorted(messages, key=lambda item: item[0])]


def _cross_errors(plan: Plan) -> list[tuple[KeyPath, str]]:
    """Rules between fields, checked once every field is valid (ids, references, resources)."""
    errors: list[tuple[KeyPath, str]] = []

    def unique(section: str, items: list) -> None:
        seen: set[str] = set()
        for index, item in enumerate(items):
            if item.id in seen:
                errors.append(((section, index, "id"), f"'{item.id}' is used twice; ids must be unique"))
            seen.add(item.id)

    steps = plan.schedule.steps
    unique("variants", plan.variants)
    unique("stop_rules", plan.stop_rules)
    for index, step in enumerate(steps):
        if step.id in {s.id for s in steps[:index]}:
            errors.append((("schedule", "steps", index, "id"), f"'{step.id}' is used twice; ids must be unique"))
    unique("decision_points", plan.decision_points)
    unique("deliverables", plan.deliverables)

    step_ids = [s.id for s in steps]
    variant_ids = [v.id for v in plan.variants]

    def known(path: KeyPath, value: str, choices: list[str], what: str) -> None:
        if value not in choices:
            close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else f"the plan's {what}s are: {', '.join(choices) or 'none'}"
            errors.append((path, f"unknown {what} '{value}'; {hint}"))

    gpu_names: list[str] = []
    for index, lot in enumerate(plan.order.lots):
        if lot.gpu_names is not None and len(lot.gpu_names) != lot.gpus:
            errors.append(
                (("order", "lots", index, "gpu_names"), f"names {len(lot.gpu_names)} GPUs but the lot holds gpus: {lot.gpus}")
            )
        currency = lot.currency or plan.order.currency
        if currency != plan.order.currency:
            errors.append(
                (
                    ("order", "lots", index, "currency"),
                    f"{currency} differs from the order's {plan.order.currency}; reportgen never converts currencies",
                )
            )
    for name in plan.gpu_names():
        if name in gpu_names or name in MACHINE_RESOURCES or name == HUMAN_RESOURCE:
            errors.append((("order", "lots"), f"GPU name '{name}' is used twice or is reserved"))
        gpu_names.append(name)

    for index, step in enumerate(steps):
        base: KeyPath = ("schedule", "steps", index)
        if step.resource not in (*MACHINE_RESOURCES, HUMAN_RESOURCE) and step.resource not in gpu_names:
            close = difflib.get_close_matches(step.resource, gpu_names, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'? " if close else ""
            errors.append(
                (
                    base + ("resource",),
                    f"unknown GPU '{step.resource}'; {hint}the plan's GPUs are: {', '.join(gpu_names)} "
                    f"(other resources: cpu, human)",
                )
            )
        for dep_index, dep in enumerate(step.depends_on):
            if dep == step.id:
                errors.append((base + ("depends_on", dep_index), "a step cannot depend on itself"))
            else:
                known(base + ("depends_on", dep_index), dep, step_ids, "step")
        if step.variant is not None:
            known(base + ("variant",), step.variant, variant_ids, "variant")

    cycle = _find_cycle(plan)
    if cycle:
        index = step_ids.index(cycle[0])
        errors.append((("schedule", "steps", index, "depends_on"), "dependency cycle: " + " -> ".join(cycle)))

    for index, point in enumerate(plan.decision_points):
        known(("decision_points", index, "after"), point.after, step_ids, "step")
    for index, deliverable in enumerate(plan.deliverables):
        if deliverable.variant is not None:
            known(("deliverables", index, "variant"), deliverable.variant, variant_ids, "variant")
    for index, rule in enumerate(plan.stop_rules):
        for v_index, variant in enumerate(rule.variants or []):
            known(("stop_rules", index, "variants", v_index), variant, variant_ids, "variant")
    for index, cost in enumerate(plan.order.other_costs):
        if (cost.currency or plan.order.currency) != plan.order.currency:
            errors.append(
                (
                    ("order", "other_costs", index, "currency"),
                    f"{cost.currency} differs from the order's {plan.order.currency}; reportgen never converts currencies",
                )
            )
    return errors


def _find_cycle(plan: Plan) -> list[str] | None:
    depends = {s.id: [d for d in s.depends_on if plan.step(d) is not None] for s in plan.schedule.steps}
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> list[str] | None:
        if node in trail:
            return trail[trail.index(node):] + [node]
        if node in done:
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


def load_plan(path: str | Path) -> LoadedPlan:
    """Read and validate a plan; raise PlanError listing every problem with its line."""
    path = Path(path)
    raw, text = _read_text(path)
    return parse_plan(path, raw, text)


def parse_plan(path: Path, raw: bytes, text: str) -> LoadedPlan:
    data, lines = _parse_yaml(path, text)
    if not isinstance(data, dict):
        raise PlanError(str(path), [f"{path}:1: the plan must be a mapping of sections (campaign, corpus, ...)"])
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        raise PlanError(str(path), _schema_errors(path, lines, exc)) from None
    cross = _cross_errors(plan)
    if cross:
        ordered = sorted(cross, key=lambda item: line_of(lines, item[0]) or 0)
        raise PlanError(
            str(path),
            [f"{path}:{line_of(lines, key) or 1}: {format_key(key)}: {message}" for key, message in ordered],
        )
    return LoadedPlan(plan=plan, path=path, text=text, sha256=hashlib.sha256(raw).hexdigest(), lines=lines)
