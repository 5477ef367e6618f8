"""The stylesheet: every text colour is readable on every background (WCAG AA), and every value the
report shows as a badge has a style of its own."""

from __future__ import annotations

import colorsys
import re
from itertools import product

import pytest

from reportgen.analysis.decisions import PointState
from reportgen.analysis.verdicts import CampaignVerdict, VariantVerdict
from reportgen.model import Status
from reportgen.render.site import templates_dir

CSS = templates_dir() / "assets" / "style.css"
AA_NORMAL_TEXT = 4.5  # WCAG 2.x 1.4.3; the site has no text large enough for the 3:1 of large text


def rules(css: str) -> list[tuple[list[str], dict[str, str]]]:
    """(selectors, declarations) of every rule, those inside @media included."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    found = []
    for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        declarations = {
            name.strip(): value.strip() for name, value in (d.split(":", 1) for d in body.split(";") if ":" in d)
        }
        found.append(([s.strip() for s in selector.split(",")], declarations))
    return found


def palette(css: str) -> dict[str, str]:
    """The custom properties of :root, by name (--fg ...)."""
    (root,) = [d for selectors, d in rules(css) if selectors == [":root"]]
    return {name: value for name, value in root.items() if name.startswith("--")}


def luminance(hex_colour: str) -> float:
    """Relative luminance, WCAG 2.x."""
    digits = hex_colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    channels = [int(digits[i: i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def colours_of(css: str, properties: tuple[str, ...]) -> dict[str, set[str]]:
    """The palette names that `properties` are given in, each with the selectors that give it."""
    used: dict[str, set[str]] = {}
    for selectors, declarations in rules(css):
        for prop in properties:
            for name in re.findall(r"var\((--[\w-]+)\)", declarations.get(prop, "")):
                used.setdefault(name, set()).update(selectors)
    return used


def test_contrast_is_computed_as_wcag_defines_it():
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    assert contrast("#fff", "#ffffff") == pytest.approx(1)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic near miss of AA
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)


def test_every_colour_is_a_palette_property_in_hex():
    css = CSS.read_text(encoding="utf-8")
    colours = palette(css)
    assert all(re.fullmatch(r"#[0-9a-f]{3}|#[0-9a-f]{6}", value) for value in colours.values()), colours
    for selectors, declarations in rules(css):
        if selectors == [":root"]:
            continue
        for prop, value in declarations.items():
            assert not re.search(r"#[0-9a-fA-F]{3,8}\b|rgba?\(|hsla?\(", value), f"{selectors}: {prop}: {value} is not var(--...)"
            for name in re.findall(r"var\((--[\w-]+)\)", value):
                assert name in colours, f"{selectors}: {prop}: {name} is not in the palette"


def test_every_text_colour_is_readable_on_every_background():
    css = CSS.read_text(encoding="utf-8")
    colours = palette(css)
    texts = colours_of(css, ("color",))
    backgrounds = colours_of(css, ("background", "background-color"))
    assert {"--fg", "--muted", "--accent", "--good", "--bad", "--warn", "--neutral"} <= texts.keys()
    assert {"--bg", "--soft", "--neutral-bg", "--target", "--cited"} <= backgrounds.keys()
    failing = [
        f"{text} {colours[text]} on {background} {colours[background]}: {contrast(colours[text], colours[background]):.2f} "
        f"({', '.join(sorted(texts[text]))[:80]})"
        for text, background in product(sorted(texts), sorted(backgrounds))
        if contrast(colours[text], colours[background]) < AA_NORMAL_TEXT
    ]
    assert not failing, "below WCAG AA (4.5:1):\n" + "\n".join(failing)


def badge_values() -> set[str]:
    """Every value a badge shows: the enums a template passes to badge(), and the literal ones."""
    literal = {value for template in templates_dir().glob("*.html")
               for value in re.findall(r"""badge\(["'](\w+)["']\)""", template.read_text(encoding="utf-8"))}
    return literal | {str(value) for value in (*VariantVerdict, *Status, *PointState)}


def colour_of(css: str, selector: str) -> str | None:
    """The palette name of a selector's text colour, if a rule gives it one."""
    for selectors, declarations in rules(css):
        if selector in selectors and "color" in declarations:
            return re.fullmatch(r"var\((--[\w-]+)\)", declarations["color"]).group(1)
    return None


def test_every_badge_value_has_a_style():
    css = CSS.read_text(encoding="utf-8")
    values = badge_values()
    assert {"baseline", "passed", "failed", "interrupted", "missed", "pending", "counted", "rejected"} <= values
    unstyled = sorted(v for v in values if colour_of(css, f".badge-{v}") is None)
    assert not unstyled, f"badges with no style: {unstyled}"
    assert all(colour_of(css, f".verdict-{v}") for v in CampaignVerdict), "a campaign verdict with no style"


def test_the_baseline_badge_is_neutral_neither_a_pass_nor_a_failure():
    css = CSS.read_text(encoding="utf-8")
    colours = palette(css)
    baseline = colour_of(css, ".badge-baseline")
    judged = {colour_of(css, f".badge-{v}") for v in ("passed", "failed", "stopped")}
    assert baseline not in judged, f"the baseline badge is coloured {baseline}, like a judged variant"

    red, green, blue = (int(colours[baseline].lstrip("#")[i: i + 2], 16) / 255 for i in (0, 2, 4))
    hue, _, saturation = colorsys.rgb_to_hls(red, green, blue)
    assert saturation < 0.15 or 180 <= hue * 360 <= 250, f"{colours[baseline]} is neither grey nor blue"
