//! Which media types a fetch returns: text only.
//!
//! | text | types |
//! |---|---|
//! | all of `text/*` | `text/html`, `text/plain`, `text/markdown`, `text/css`, `text/csv`, … |
//! | JSON | `application/json` and every `application/…+json` (`ld+json`, `problem+json`, …) |
//! | XML | `application/xml` and every `application/…+xml` (`xhtml+xml`, `rss+xml`, `atom+xml`, …) |
//! | scripts | `application/javascript`, `application/x-javascript`, `application/ecmascript` |
//! | configuration | `application/yaml`, `application/x-yaml`, `application/toml`, `application/x-sh` |
//!
//! Anything else (images, PDFs, archives, `application/octet-stream`) is
//! refused. HTML is `text/html` and `application/xhtml+xml`.

/// A `Content-Type` header's media type, lower case, without parameters
/// (`""` for none).
pub(super) fn media_type(header: Option<&str>) -> String {
    header
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether `media_type` (lower case, no parameters) is text (the table in
/// the module docs).
pub fn is_text(media_type: &str) -> bool {
    let Some((top, sub)) = media_type.split_once('/') else {
        return false;
    };
    match top {
        "text" => !sub.is_empty(),
        "application" => {
            sub.ends_with("+json")
                || sub.ends_with("+xml")
                || matches!(
                    sub,
                    "json"
                        | "xml"
                        | "javascript"
                        | "x-javascript"
                        | "ecmascript"
                        | "yaml"
                        | "x-yaml"
                        | "toml"
                        | "x-sh"
                )
        }
        _ => false,
    }
}

/// Whether `media_type` is HTML.
pub(super) fn is_html(media_type: &str) -> bool {
    matches!(media_type, "text/html" | "application/xhtml+xml")
}

/// Whether a body whose type was not named reads as text: UTF-8 (a
/// character cut at its end aside) with no NUL byte.
pub(super) fn looks_like_text(body: &[u8]) -> bool {
    if body.contains(&0) {
        return false;
    }
    match std::str::from_utf8(body) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_types_pass_and_the_rest_does_not() {
        for t in [
            "text/html",
            "text/plain",
            "text/csv",
            "application/json",
            "application/ld+json",
            "application/xml",
            "application/xhtml+xml",
            "application/rss+xml",
            "application/javascript",
        ] {
            assert!(is_text(t), "{t}");
        }
        for t in [
            "image/png",
            "application/octet-stream",
            "application/pdf",
            "application/zip",
            "video/mp4",
            "text/",
            "text",
            "",
        ] {
            assert!(!is_text(t), "{t}");
        }
        assert_eq!(
            media_type(Some("Text/HTML; charset=UTF-8")),
            "text/html".to_string()
        );
    }

    #[test]
    fn a_body_without_a_type_is_text_only_when_it_reads_as_text() {
        assert!(looks_like_text(b"plain words"));
        assert!(looks_like_text(&"é".as_bytes()[..1]));
        assert!(!looks_like_text(b"\x89PNG\r\n\x1a\n\0\0"));
        assert!(!looks_like_text(b"\xff\xfe words"));
    }
}
