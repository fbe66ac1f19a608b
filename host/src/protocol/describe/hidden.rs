//! Which characters a terminal would not show as themselves: the table
//! behind [`super::printable`]. A character listed here is shown as its
//! escape (`\u{200b}`) instead, so a teammate cannot hide, reorder or
//! smuggle text past the lead's eyes.

/// Unicode 16.0 general category Cf (format), sorted, inclusive ranges.
/// The `every_format_character_is_in_the_table` test checks it against the
/// `regex` crate's own Unicode tables, so a Unicode update that adds a
/// format character fails the build's tests instead of slipping through.
pub(super) const FORMAT: &[(char, char)] = &[
    ('\u{ad}', '\u{ad}'),       // soft hyphen
    ('\u{600}', '\u{605}'),     // Arabic number signs
    ('\u{61c}', '\u{61c}'),     // Arabic letter mark
    ('\u{6dd}', '\u{6dd}'),     // Arabic end of ayah
    ('\u{70f}', '\u{70f}'),     // Syriac abbreviation mark
    ('\u{890}', '\u{891}'),     // Arabic pound and piastre marks above
    ('\u{8e2}', '\u{8e2}'),     // Arabic disputed end of ayah
    ('\u{180e}', '\u{180e}'),   // Mongolian vowel separator
    ('\u{200b}', '\u{200f}'),   // zero-width space, ZWNJ, ZWJ, LRM, RLM
    ('\u{202a}', '\u{202e}'),   // bidi embeddings and overrides
    ('\u{2060}', '\u{2064}'),   // word joiner, invisible operators
    ('\u{2066}', '\u{206f}'),   // bidi isolates, deprecated format chars
    ('\u{feff}', '\u{feff}'),   // zero-width no-break space (BOM)
    ('\u{fff9}', '\u{fffb}'),   // interlinear annotation marks
    ('\u{110bd}', '\u{110bd}'), // Kaithi number sign
    ('\u{110cd}', '\u{110cd}'), // Kaithi number sign above
    ('\u{13430}', '\u{1343f}'), // Egyptian hieroglyph format controls
    ('\u{1bca0}', '\u{1bca3}'), // shorthand format controls
    ('\u{1d173}', '\u{1d17a}'), // musical symbol format controls
    ('\u{e0001}', '\u{e0001}'), // language tag
    ('\u{e0020}', '\u{e007f}'), // tag characters
];

/// Characters that are not Cf but draw nothing and are ignored by
/// renderers (Unicode's Default_Ignorable_Code_Point), or end a line, or
/// are not characters at all. Sorted, inclusive ranges.
///
/// Variation selectors VS1–VS16 (U+FE00–FE0F) are kept as they are: they
/// pick an emoji's or a glyph's look and every emoji with `️` needs them.
/// VS17–VS256 (U+E0100–E01EF) are escaped: legitimate text rarely has them,
/// and a run of them after one visible character can carry a hidden payload.
pub(super) const INVISIBLE: &[(char, char)] = &[
    ('\u{34f}', '\u{34f}'),     // combining grapheme joiner
    ('\u{115f}', '\u{1160}'),   // Hangul choseong and jungseong fillers
    ('\u{17b4}', '\u{17b5}'),   // Khmer inherent vowels
    ('\u{180b}', '\u{180d}'),   // Mongolian free variation selectors
    ('\u{180f}', '\u{180f}'),   // Mongolian free variation selector four
    ('\u{2028}', '\u{2029}'),   // line and paragraph separators
    ('\u{2065}', '\u{2065}'),   // reserved default-ignorable
    ('\u{3164}', '\u{3164}'),   // Hangul filler
    ('\u{fdd0}', '\u{fdef}'),   // noncharacters
    ('\u{ffa0}', '\u{ffa0}'),   // halfwidth Hangul filler
    ('\u{e0000}', '\u{e0fff}'), // tag block, VS17–VS256, reserved ignorables
];

/// Whether `c` is in one of the sorted, non-overlapping `ranges`.
pub(super) fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Whether `c` must be escaped in any text shown to a person: a control
/// character other than `\n` and `\t`, a format character (Cf, ZWJ
/// included: emoji ZWJ sequences then show as their parts, the price of
/// never hiding a character), an invisible or line-ending character of
/// [`INVISIBLE`], or a noncharacter (U+xFFFE, U+xFFFF of every plane).
pub(super) fn hidden(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control() && c != '\n' && c != '\t';
    }
    c.is_control()
        || (c as u32 & 0xfffe) == 0xfffe
        || in_ranges(FORMAT, c)
        || in_ranges(INVISIBLE, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(ranges: &[(char, char)]) -> bool {
        ranges.iter().all(|(lo, hi)| lo <= hi) && ranges.windows(2).all(|w| w[0].1 < w[1].0)
    }

    #[test]
    fn the_tables_are_sorted_and_do_not_overlap() {
        assert!(sorted(FORMAT));
        assert!(sorted(INVISIBLE));
    }

    #[test]
    fn every_format_character_is_in_the_table_and_nothing_else_is() {
        let cf = regex::Regex::new(r"^\p{Cf}$").unwrap();
        let mut missing = Vec::new();
        let mut extra = Vec::new();
        for c in (0..=0x10ffffu32).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let is_cf = cf.is_match(c.encode_utf8(&mut buf));
            match (is_cf, in_ranges(FORMAT, c)) {
                (true, false) => missing.push(format!("{:x}", c as u32)),
                (false, true) => extra.push(format!("{:x}", c as u32)),
                _ => {}
            }
            if is_cf {
                assert!(hidden(c), "U+{:04X} is Cf but shown as is", c as u32);
            }
        }
        assert!(missing.is_empty(), "Cf missing from FORMAT: {missing:?}");
        assert!(extra.is_empty(), "not Cf but in FORMAT: {extra:?}");
    }

    #[test]
    fn the_whole_tag_block_and_the_line_separators_are_hidden() {
        for c in ('\u{e0000}'..='\u{e007f}').chain(['\u{2028}', '\u{2029}', '\u{85}']) {
            assert!(hidden(c), "U+{:04X}", c as u32);
        }
        for c in [
            '\u{fffe}',
            '\u{ffff}',
            '\u{1fffe}',
            '\u{10ffff}',
            '\u{fdd0}',
        ] {
            assert!(hidden(c), "noncharacter U+{:04X}", c as u32);
        }
    }

    #[test]
    fn visible_text_is_not_hidden() {
        let text = "plain ASCII, accents éàü, 中文, العربية, emoji 🦀❤\u{fe0f}, \
                    combining e\u{301}, nbsp\u{a0}, ideographic space\u{3000}, \
                    replacement \u{fffd}, private use \u{e000}\n\t";
        for c in text.chars() {
            assert!(!hidden(c), "U+{:04X} {c:?} should show as itself", c as u32);
        }
    }
}
