//! Echoing what a person wrote back in a message: values escaped and cut
//! short, so that a message is one line whatever the input holds.
//!
//! A spec, a trace cell or a scenario value can hold anything: a newline,
//! a terminal escape that rewrites the screen, a bidirectional override
//! that reorders the line, or five megabytes. Every message that quotes
//! input quotes it through here. It lives in this crate, the lowest that
//! echoes input (its specs), so the trace reader and the simulator's
//! scenario wording use the same rules.

use alloc::format;
use alloc::string::String;

/// Characters of a value a message echoes; the rest is elided.
pub const ECHO_CHARS: usize = 40;

/// `s` as a message shows it: control and direction-changing characters
/// written as TOML escapes (`\n`, `\u001B`), so that nothing a file holds
/// can break the line or rewrite the terminal, and cut after
/// [`ECHO_CHARS`] characters with an ellipsis and the full length.
pub fn show(s: &str) -> String {
    escape(s, ECHO_CHARS, true)
}

/// A file's name (or a label naming one) as a message shows it: escaped
/// as [`show`] does, but whole, since a path cut short names nothing.
pub fn name(s: &str) -> String {
    escape(s, usize::MAX, false)
}

/// `s` with its control characters escaped, cut after `keep` characters;
/// `quotes`: also escape what would end or escape a quoted value.
pub fn escape(s: &str, keep: usize, quotes: bool) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == keep {
            out.push_str(&format!("... ({} characters)", s.chars().count()));
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '"' if quotes => out.push_str("\\\""),
            '\\' if quotes => out.push_str("\\\\"),
            c if c.is_control() || is_format(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Unicode's invisible formatting characters that reorder or hide text on
/// a terminal (bidirectional overrides, zero-width characters, the BOM).
fn is_format(c: char) -> bool {
    matches!(c as u32, 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn values_are_escaped_and_cut_short() {
        assert_eq!(show("reno"), "reno");
        assert_eq!(show("a\nb\t\u{1b}[31m"), "a\\nb\\t\\u001B[31m");
        assert_eq!(show("\u{202E}x"), "\\u202Ex");
        let long = "x".repeat(5_000_000);
        assert_eq!(
            show(&long),
            format!("{}... (5000000 characters)", "x".repeat(40))
        );
        assert_eq!(show("a\"b\\"), "a\\\"b\\\\");
        // A name is whole, and its quotes and backslashes are its own.
        let path = "/tmp/".to_string() + &"d".repeat(100) + "/a\"b\n";
        assert_eq!(name(&path), path.replace('\n', "\\n"));
    }
}
