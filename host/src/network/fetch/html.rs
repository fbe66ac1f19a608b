//! An HTML page turned into Markdown for the model, bounded against a
//! hostile page.
//!
//! The page is parsed by html5ever (through `htmd`) as browsers parse it,
//! and `htmd` writes the Markdown; scripts, styles and other parts a reader
//! never sees are left out. Two bounds come first, because an HTML tree
//! builder spends time in proportion to the depth of the open elements for
//! each tag (a page of a million nested `<div>` would take hours) and the
//! converter recurses (it would exhaust a stack):
//!
//! 1. a linear scan estimates the nesting from the tags ([`estimate_depth`]);
//!    a page estimated deeper than [`MAX_DEPTH`] is not parsed: its text
//!    is returned without its tags ([`strip_tags`]), with a note;
//! 2. in the parsed tree, elements deeper than twice that are cut before
//!    the converter walks it, on a thread with a stack of
//!    [`CONVERTER_STACK`] bytes.

use std::collections::HashMap;
use std::rc::Rc;

/// The deepest element nesting estimated from the tags that is parsed:
/// half Chromium's bound (512), which keeps the worst page found (10 MiB
/// built to be slow at the bound) to seconds of one thread's time.
pub const MAX_DEPTH: usize = 256;

/// The depth at which the parsed tree is cut: twice the estimate's bound,
/// for the elements a parser opens that the estimate does not see (the
/// document, `html`, `body`, a formatting element opened again).
const MAX_TREE_DEPTH: usize = 2 * MAX_DEPTH;

/// The converter's stack: room for [`MAX_DEPTH`] levels many times over.
const CONVERTER_STACK: usize = 32 << 20;

/// Elements that never hold others (no end tag).
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen",
];

/// Elements a parser closes by itself when the next of their kind opens
/// (`<p><p>`, `<li><li>`): they add no depth when nested in themselves.
const SELF_CLOSING_RUNS: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody", "tfoot", "rb",
    "rt", "rp", "html", "head", "body",
];

/// `html` (UTF-8 or not: a byte that is not is replaced) as Markdown, on a
/// thread of its own.
pub(super) async fn to_markdown(html: Vec<u8>) -> String {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("webfetch-markdown".into())
        .stack_size(CONVERTER_STACK)
        .spawn(move || {
            let _ = tx.send(convert(&String::from_utf8_lossy(&html)));
        });
    match spawned {
        Ok(_) => rx
            .await
            .unwrap_or_else(|_| "(the page could not be converted)".into()),
        Err(e) => format!("(the page could not be converted: {e})"),
    }
}

/// The conversion itself (see the module docs).
fn convert(html: &str) -> String {
    if estimate_depth(html) > MAX_DEPTH {
        return format!(
            "(the page nests its elements more than {MAX_DEPTH} deep: its text without the markup follows)\n\n{}",
            strip_tags(html)
        );
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "head", "iframe", "object", "embed", "svg",
            "canvas",
        ])
        .build();
    let tree = match converter.html_to_tree(html) {
        Ok(tree) => tree,
        Err(e) => return format!("(the page could not be parsed: {e})"),
    };
    let cut = cut_below(&tree, MAX_TREE_DEPTH);
    let mut markdown = converter.tree_to_markdown(&tree);
    if cut {
        markdown.push_str(&format!(
            "\n\n(elements nested deeper than {MAX_TREE_DEPTH} levels were left out)"
        ));
    }
    markdown
}

/// The tags of `html` in order, each as (its lower-case name, whether it is
/// an end tag, whether it ends with `/>`); comments and the contents of
/// `script`, `style` and `textarea` skipped.
fn tags(html: &str) -> impl Iterator<Item = (String, bool, bool)> + '_ {
    let bytes = html.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || loop {
        let open = at + memchr(b'<', &bytes[at..])?;
        if bytes[open..].starts_with(b"<!--") {
            at = match find(&bytes[open + 4..], b"-->") {
                Some(end) => open + 4 + end + 3,
                None => bytes.len(),
            };
            continue;
        }
        let end_tag = bytes.get(open + 1) == Some(&b'/');
        let start = open + 1 + end_tag as usize;
        let name_len = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
            .count();
        let close = start + memchr(b'>', &bytes[start..]).unwrap_or(bytes.len() - start);
        at = (close + 1).min(bytes.len());
        if name_len == 0 || !bytes[start].is_ascii_alphabetic() {
            continue;
        }
        let name = html[start..start + name_len].to_ascii_lowercase();
        let self_closed = close > start && bytes.get(close - 1) == Some(&b'/');
        if !end_tag && matches!(name.as_str(), "script" | "style" | "textarea") {
            let ending = format!("</{name}");
            at = match find_ignore_case(&bytes[at..], ending.as_bytes()) {
                Some(end) => at + end,
                None => bytes.len(),
            };
        }
        return Some((name, end_tag, self_closed));
    })
}

/// The deepest nesting the tags of `html` reach, estimated in one pass:
/// every start tag opens (but a void element, one written `/>` and one of
/// [`SELF_CLOSING_RUNS`]), an end tag closes one of its name that is open.
/// A parser may nest deeper than this (a table opens `tbody`, `tr` and `td`
/// unwritten: up to four levels for each `<table>` counted), which the cut
/// of the tree at twice the bound catches; measured, 10 MiB pages built to
/// be slow at the bound (tables in tables, formatting elements misnested)
/// take 3 to 4 s of one thread.
pub fn estimate_depth(html: &str) -> usize {
    let mut open: HashMap<String, usize> = HashMap::new();
    let (mut depth, mut deepest) = (0usize, 0usize);
    for (name, end_tag, self_closed) in tags(html) {
        if VOID.contains(&name.as_str()) || SELF_CLOSING_RUNS.contains(&name.as_str()) {
            continue;
        }
        if end_tag {
            if let Some(n) = open.get_mut(&name).filter(|n| **n > 0) {
                *n -= 1;
                depth -= 1;
            }
        } else if !self_closed {
            *open.entry(name).or_default() += 1;
            depth += 1;
            deepest = deepest.max(depth);
        }
    }
    deepest
}

/// The text of `html` without its tags, comments, scripts and styles, runs
/// of spaces and of blank lines folded.
pub fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let bytes = html.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let Some(open) = memchr(b'<', &bytes[at..]).map(|o| at + o) else {
            out.push_str(&html[at..]);
            break;
        };
        out.push_str(&html[at..open]);
        let rest = &html[open..];
        let lower: String = rest
            .chars()
            .take(9)
            .collect::<String>()
            .to_ascii_lowercase();
        let skip_to = if lower.starts_with("<!--") {
            find(&bytes[open..], b"-->").map(|e| open + e + 3)
        } else if let Some(name) = ["script", "style"]
            .into_iter()
            .find(|n| lower[1..].starts_with(n))
        {
            find_ignore_case(&bytes[open..], format!("</{name}").as_bytes())
                .and_then(|e| memchr(b'>', &bytes[open + e..]).map(|g| open + e + g + 1))
        } else {
            memchr(b'>', &bytes[open..]).map(|g| open + g + 1)
        };
        at = skip_to.unwrap_or(bytes.len());
        out.push(' ');
    }
    let mut folded = String::with_capacity(out.len());
    for line in out.lines() {
        let words = line.split_whitespace().collect::<Vec<_>>();
        if words.is_empty() && (folded.is_empty() || folded.ends_with("\n\n")) {
            continue;
        }
        folded.push_str(&words.join(" "));
        folded.push('\n');
    }
    folded.trim_end().to_string()
}

/// Drops the children of every node at `depth` (the root is at 0), without
/// recursion; whether any were dropped.
fn cut_below(root: &Rc<htmd::Node>, depth: usize) -> bool {
    let mut cut = false;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, level)) = stack.pop() {
        if level >= depth {
            let mut children = node.children.borrow_mut();
            cut |= !children.is_empty();
            children.clear();
            continue;
        }
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), level + 1));
        }
    }
    cut
}

fn memchr(byte: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|b| *b == byte)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn find_ignore_case(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `convert` on a thread with the converter's stack, as the fetcher runs it.
    fn converted(html: String) -> String {
        std::thread::Builder::new()
            .stack_size(CONVERTER_STACK)
            .spawn(move || convert(&html))
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let md = converted(
            "<html><head><title>T</title><style>p{}</style></head><body><h1>Hello</h1>\
             <p>A <a href=\"https://example.com/\">link</a>.</p><script>alert(1)</script></body></html>"
                .into(),
        );
        assert!(md.contains("# Hello"), "{md}");
        assert!(md.contains("[link](https://example.com/)"), "{md}");
        assert!(!md.contains("alert"), "{md}");
        assert!(!md.contains("p{}"), "{md}");
    }

    #[test]
    fn the_depth_estimate_does_not_count_what_does_not_nest() {
        let page = "<html><body><p>a<p>b<ul><li>x<li>y</ul><br><img src=x/>\
                    <!-- <div><div><div> --><script>'<div><div>'</script></body></html>";
        assert_eq!(estimate_depth(page), 1);
        assert_eq!(estimate_depth(&"<div>".repeat(600)), 600);
        assert_eq!(estimate_depth(&"<div></div>".repeat(600)), 1);
        // An end tag of an element that is not open closes nothing.
        assert_eq!(estimate_depth(&"<div></span>".repeat(600)), 600);
    }

    #[test]
    fn a_page_nested_a_million_deep_is_returned_as_text_quickly() {
        let deep = format!(
            "{}deep text{}",
            "<div>".repeat(1_000_000),
            "</div>".repeat(1_000_000)
        );
        let started = std::time::Instant::now();
        let md = converted(deep);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert!(
            md.starts_with("(the page nests"),
            "{}",
            &md[..md.len().min(200)]
        );
        assert!(md.contains("deep text"));
        let shallow = format!("{}shallow{}", "<div>".repeat(100), "</div>".repeat(100));
        assert!(converted(shallow).contains("shallow"));
    }

    #[test]
    fn a_wide_page_at_the_depth_bound_converts() {
        let page = format!(
            "{}{}",
            "<div>".repeat(MAX_DEPTH - 1),
            "<div>x</div>".repeat(200_000)
        );
        assert_eq!(estimate_depth(&page), MAX_DEPTH);
        let started = std::time::Instant::now();
        let md = converted(page);
        eprintln!("took {:?}", started.elapsed());
        assert!(md.contains("x\n\nx"), "{}", &md[..md.len().min(300)]);
        assert!(!md.contains("left out"));
    }

    #[test]
    fn a_tree_deeper_than_the_bound_is_cut() {
        let tree = htmd::HtmlToMarkdown::new()
            .html_to_tree(&format!("{}x", "<div>".repeat(50)))
            .unwrap();
        assert!(cut_below(&tree, 10));
        assert!(!cut_below(&tree, 10), "cut once, nothing deeper is left");
    }

    #[test]
    fn the_scanners_take_any_input() {
        let pieces = [
            "<", ">", "/", "!--", "-->", "div", "DIV", "script", "style", "p", " ", "é", "x", "</",
            "/>", "<!", "textarea", "=\"", "\0",
        ];
        let mut rng = fastrand::Rng::with_seed(46);
        for _ in 0..5000 {
            let len = rng.usize(0..40);
            let page: String = (0..len)
                .map(|_| pieces[rng.usize(..pieces.len())])
                .collect();
            let depth = estimate_depth(&page);
            assert!(depth <= page.len(), "{page:?}");
            let text = strip_tags(&page);
            assert!(!text.contains("<!--"), "{page:?} -> {text:?}");
        }
    }

    #[test]
    fn stripped_text_keeps_the_words_only() {
        let text = strip_tags(
            "<p>one <b>two</b></p><!-- no --><script>no()</script><STYLE>x{}</STYLE>three",
        );
        assert_eq!(text, "one two three");
    }
}
