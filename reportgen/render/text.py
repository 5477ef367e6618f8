"""User text on the site: Markdown rendered, then sanitised so no script from the inputs runs."""

from __future__ import annotations

import markdown as md
import nh3
from markupsafe import Markup

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "em", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol",
    "p", "pre", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}


def markdown_html(text: str | None) -> Markup:
    """Markdown from a plan or note as safe HTML: only plain formatting tags, only http(s)/mailto links."""
    if not text:
        return Markup("")
    html = md.markdown(text, extensions=["tables", "fenced_code", "sane_lists"], output_format="html")
    clean = nh3.clean(
        html,
        tags=_TAGS,
        attributes={"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )
    return Markup(clean)
