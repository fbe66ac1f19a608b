"""Text helpers."""


def slug(title):
    """A URL-friendly form of a title: lower case, words joined by '-'."""
    return "-".join(title.lower().split())
