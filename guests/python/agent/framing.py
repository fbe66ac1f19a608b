"""How text other teammates wrote is framed for the model: the
<teammate-message> block, and the one escaping rule every teamhost agent
applies (guests/agent/src/framing.rs states it, with the reasons), so that a
message can neither end its own block nor pose as another sender.

| text                                     | what changes                                   |
|------------------------------------------|------------------------------------------------|
| an attribute value (teammate_id, summary)| & -> &amp;; " and look-alikes (QUOTES) -> &quot;; < and look-alikes (OPENERS) -> &lt;; > -> &gt;; a line break -> a space |
| a body, a task's subject and description | < and look-alikes (OPENERS) -> &lt;            |

Nothing else changes. The cases in guests/agent/framing-cases.json are
checked here too (test_framing.py), so the three agents cannot drift apart.
"""

# < and the characters a model may read as <: in text a teammate wrote, each
# is shown as &lt;.
OPENERS = frozenset("<\uff1c\ufe64\u02c2\u1438\u2039\u2329\u27e8\u3008\u276e")
# " and the characters a model may read as ": in an attribute value, each is
# shown as &quot;.
QUOTES = frozenset('"\uff02\u201c\u201d')


def teammate_block(sender: str, summary: str | None, text: str) -> str:
    """One message as the model sees it: <teammate-message teammate_id="FROM"
    summary="SUMMARY">, the text on its own lines, </teammate-message>; the
    summary only when given and not empty."""
    attrs = f' summary="{attribute(summary)}"' if summary else ""
    return f'<teammate-message teammate_id="{attribute(sender)}"{attrs}>\n{shown(text)}\n</teammate-message>'


def attribute(value: str) -> str:
    """value made safe between double quotes."""
    out = []
    for c in value:
        if c == "&":
            out.append("&amp;")
        elif c == ">":
            out.append("&gt;")
        elif c in "\n\r":
            out.append(" ")
        elif c in QUOTES:
            out.append("&quot;")
        elif c in OPENERS:
            out.append("&lt;")
        else:
            out.append(c)
    return "".join(out)


def shown(text: str) -> str:
    """text with every < and look-alike shown as &lt;: it opens or closes no tag."""
    return "".join("&lt;" if c in OPENERS else c for c in text)
