"""The page memo: what `reportgen watch` keeps of the pages it rendered, so that a build after a few logs
changed renders again only the pages whose inputs changed (a run's page and its charts, a file's
evidence page), and writes the others as they were.

A page is kept with a key made of everything it is rendered from besides the report (the run's entry
and what its charts are drawn from, the quoted lines, where links land, the templates) and, for the
report, the entries the templates actually read while rendering it (`Tracked`), each with a digest: a
later build reuses the page only when the key and every entry it read are the same. A template that
reads more of the report (an edited or overriding one) makes its pages depend on more, never on less.
The lot clock's banner, on every page and new at every build, is rendered once per build and put in
each page's slot (CLOCK_SLOT). Kept in memory by the watcher, for the pages of the last build only; the
site is byte for byte the one a build without the memo writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from markupsafe import Markup

from reportgen.recall import digest

# Where a page rendered for the memo has the clock's banner: filled in at each build (the header's clock_html).
CLOCK_SLOT = Markup("<!--reportgen:clock-->")
_MISSING = object()


class Tracked(Mapping[str, object]):
    """The report as a template sees it: every top-level entry it reads is noted (`read`)."""

    def __init__(self, report: dict):
        self._report = report
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> object:
        self.read.add(key)
        return self._report[key]

    def __iter__(self) -> Iterator[str]:
        self.read.update(self._report)
        return iter(self._report)

    def __len__(self) -> int:
        return len(self._report)


class Asked(frozenset):
    """The evidence lists that have a page of their own (Links.cited), noting each one a page asked about and
    the answer (`answers`): a page depends on those answers, not on every other list of the campaign."""

    answers: dict[str, bool]

    def __new__(cls, items: frozenset[str]) -> Asked:
        made = super().__new__(cls, items)
        made.answers = {}
        return made

    def __contains__(self, key: object) -> bool:
        found = super().__contains__(key)
        self.answers[str(key)] = found
        return found


@dataclass
class Rendered:
    """A task's pages as rendered for the memo (the clock's slot left in them), with the report's entries they
    read and the answers they were given about evidence lists with a page of their own."""

    files: list[tuple[str, str]]
    read: set[str]
    asked: dict[str, bool] = field(default_factory=dict)


@dataclass
class _Kept:
    key: bytes
    read: dict[str, bytes]  # each report entry the render read -> its digest then
    asked: dict[str, bool]
    files: list[tuple[str, str]]


@dataclass
class PageMemo:
    """The pages of the last build, by task name (a run's page and the pages its tables go on over; a file's
    evidence page), held across builds by the watcher."""

    kept: dict[str, _Kept] = field(default_factory=dict)
    json_parts: dict[bytes, str] = field(default_factory=dict)  # report.json's parts of the last build, by digest
    reused: int = 0
    rendered: int = 0

    def begin(self, report: dict, cited: frozenset[str], *fingerprint: object) -> BuildMemo:
        """One build's use of the memo; `cited`: the evidence lists with a page of their own in this build;
        `fingerprint`: what every page depends on (the templates, the site's navigation, the plan's text)."""
        return BuildMemo(self, report, cited, digest(*fingerprint))


class BuildMemo:
    def __init__(self, memo: PageMemo, report: dict, cited: frozenset[str], fingerprint: bytes):
        self.memo, self.report, self.cited, self.fingerprint = memo, report, cited, fingerprint
        self._digests: dict[str, bytes] = {}
        self._values: dict[int, tuple[object, bytes]] = {}  # id -> (a value of this build's report, its digest)
        self.used: set[str] = set()
        memo.reused = memo.rendered = 0

    def entry(self, name: str) -> bytes:
        """The digest of one top-level entry of this build's report (worked out once per build)."""
        if name not in self._digests:
            value = self.report.get(name, _MISSING)
            # A list (the runs...) by its items' digests, each worked out once for the build (report.json's too).
            self._digests[name] = digest([self.of(item) for item in value]) if isinstance(value, list) else self.of(value)
        return self._digests[name]

    def of(self, value: object) -> bytes:
        """The digest of a value of this build's report, worked out once per build: a run's entry serves both
        its page's key and report.json. The value is held with its digest, so its id is never another's."""
        held = self._values.get(id(value))
        if held is None or held[0] is not value:
            held = self._values[id(value)] = (value, digest(value))
        return held[1]

    def key(self, *parts: object) -> bytes:
        return digest(self.fingerprint, *parts)

    def lookup(self, name: str, key: bytes) -> list[tuple[str, str]] | None:
        """The pages kept under `name` when they were rendered from the same inputs; None otherwise."""
        self.used.add(name)
        kept = self.memo.kept.get(name)
        if (kept is None or kept.key != key or any(self.entry(entry) != value for entry, value in kept.read.items())
                or any((asked in self.cited) != answer for asked, answer in kept.asked.items())):
            return None
        self.memo.reused += 1
        return kept.files

    def keep(self, name: str, key: bytes, rendered: Rendered) -> None:
        self.used.add(name)
        self.memo.rendered += 1
        self.memo.kept[name] = _Kept(key, {entry: self.entry(entry) for entry in sorted(rendered.read)}, rendered.asked,
                                     rendered.files)

    def end(self) -> None:
        """Pages this build did not make (a run gone, a file no longer cited) are forgotten."""
        for name in set(self.memo.kept) - self.used:
            del self.memo.kept[name]

    def report_json(self) -> str:
        """report.json as json.dumps(report, indent=2) writes it, each top-level entry (each item of one that is
        a list: a run, an input) encoded again only when it changed since the last build (Python's encoder
        indents slowly)."""
        parts: dict[bytes, str] = {}

        def encoded(value: object, level: int) -> str:
            key = digest(self.of(value), level)
            if key not in parts:
                parts[key] = self.memo.json_parts.get(key) or _indented(value, level)
            return parts[key]

        lines = []
        for name, value in self.report.items():
            if isinstance(value, list) and value:  # a list (the runs, the inputs...): each item encoded apart
                items = ",\n".join("    " + encoded(item, 2) for item in value)
                lines.append(f"  {json.dumps(name, ensure_ascii=False)}: [\n{items}\n  ]")
            else:
                lines.append(f"  {json.dumps(name, ensure_ascii=False)}: {encoded(value, 1)}")
        self.memo.json_parts = parts
        return "{\n" + ",\n".join(lines) + "\n}\n" if lines else "{}\n"


def _indented(value: object, level: int) -> str:
    """`value` as json.dumps(..., indent=2) writes it `level` levels deep in a document (JSON strings hold no
    raw line break, so every line break is one of the indentation's)."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False).replace("\n", "\n" + "  " * level)
