//! Putting a bad value, and what the TOML parser refused, into words a
//! person can act on: values are echoed escaped and cut short (a message is
//! one line, whatever the file holds), and serde's messages ("invalid
//! type: map, expected a sequence", "expected struct LinkSection",
//! "expected i64") are rewritten to name the key, what was written and
//! what the key takes.

use std::ops::Range;

// How values are escaped and cut is kleinrock_cc's (`echo`), shared with
// the algorithm specs' and the hook traces' messages.
use kleinrock_cc::echo::{escape, ECHO_CHARS};
pub use kleinrock_cc::echo::{name, show};

/// A TOML literal as written (`"x"`, `1.5`, `[1, 2]`), escaped and cut
/// as [`show`] does but with its own quotes kept.
fn show_literal(s: &str) -> String {
    escape(s, ECHO_CHARS, false)
}

/// `s` in quotes, as [`show`] shows it.
pub fn quoted(s: &str) -> String {
    format!("\"{}\"", show(s))
}

/// A TOML value as a message shows it: a string quoted, anything else as
/// TOML writes it, both through [`show`].
pub fn show_value(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => quoted(s),
        other => show(&other.to_string()),
    }
}

/// What the TOML parser (and serde behind it) said about `span` of
/// `text`, as a sentence; and the offset it is about.
pub(super) fn parser_error(
    text: &str,
    message: &str,
    span: Option<Range<usize>>,
) -> (usize, String) {
    let span = span.filter(|s| {
        s.end <= text.len() && text.is_char_boundary(s.start) && text.is_char_boundary(s.end)
    });
    let at = span.as_ref().map_or(0, |s| s.start);
    let written = span.as_ref().map_or("", |s| text[s.clone()].trim());
    let sentence = if let Some(rest) = message.strip_prefix("unknown field ") {
        unknown_key(text, at, rest)
    } else if let Some(rest) = message.strip_prefix("missing field ") {
        let key = backticked(rest).unwrap_or(rest);
        match span {
            Some(_) if written.starts_with('[') => {
                format!("missing key `{}` in {}", show(key), show(written))
            }
            _ => format!("missing key `{}`; the file must set it", show(key)),
        }
    } else if let Some(rest) = message.strip_prefix("invalid type: ") {
        invalid_type(text, at, written, rest)
    } else if message == "duplicate key" {
        match (header_line(text, at), table_at(text, at)) {
            (Some(h), _) => format!("{} appears twice; a table is written once", show(h)),
            (None, Some(t)) => format!(
                "`{}` is set twice in {}; a key is written once per table",
                show(written),
                show(&t)
            ),
            (None, None) => format!(
                "`{}` is set twice; a key is written once per table",
                show(written)
            ),
        }
    } else if message.starts_with("invalid basic string")
        || message.starts_with("invalid literal string")
    {
        "this is not valid TOML: a string in quotes holds a control character or is not closed; write control characters as escapes such as \\u001B".into()
    } else {
        // The parser's own sentence (it quotes no value): whole, escaped.
        format!("this is not valid TOML: {}", escape(message, 200, false))
    };
    (at, sentence)
}

/// `unknown field `k`, expected one of `a`, `b``, or `..., there are no
/// fields`.
fn unknown_key(text: &str, at: usize, rest: &str) -> String {
    let key = backticked(rest).unwrap_or(rest);
    let valid: Vec<&str> = rest
        .split_once(", expected ")
        .map(|(_, list)| list.split('`').skip(1).step_by(2).collect())
        .unwrap_or_default();
    let place = match table_at(text, at) {
        Some(t) => format!(" in {}", show(&t)),
        None => " at the top level".into(),
    };
    if valid.is_empty() {
        format!("unknown key `{}`{place}; it takes no keys", show(key))
    } else {
        format!(
            "unknown key `{}`{place}; valid keys are {}",
            show(key),
            valid.join(", ")
        )
    }
}

/// `invalid type: <found>, expected <wanted>`.
fn invalid_type(text: &str, at: usize, written: &str, rest: &str) -> String {
    let (found, wanted) = rest.rsplit_once(", expected ").unwrap_or((rest, ""));
    if is_header(text, at) {
        let name = written.trim_matches(|c| c == '[' || c == ']').trim();
        let made = if written.starts_with("[[") {
            "an array of tables"
        } else {
            "a table"
        };
        let leaf = name.rsplit('.').next();
        let must = match wanted {
            "a sequence" => format!(
                "an array of tables, written [[{}]], one per item",
                show(name)
            ),
            // serde reads a struct from an array too, as its fields in
            // order, so `[[link]]` is reported against `link`'s first
            // field: a key that takes a table is told so whatever it says.
            w if w.starts_with("struct ") || w == "a map" || leaf.and_then(example).is_none() => {
                format!("a single table, written [{}]", show(name))
            }
            w => wanted_words(leaf, w),
        };
        return format!(
            "{} makes `{}` {made}, but it must be {must}",
            show(written),
            show(name)
        );
    }
    let key = key_at(text, at);
    let what = match found {
        f if f.ends_with("as i128") && INTEGERS.contains(&wanted) => {
            return format!(
                "`{}` = {} is too large; a whole number here is at most 9223372036854775807",
                show(key.as_deref().unwrap_or("value")),
                show_literal(written)
            )
        }
        f if f.starts_with("integer") || f.starts_with("floating point") => "a number",
        f if f.starts_with("string") => "a string",
        f if f.starts_with("boolean") => "a boolean",
        "sequence" => "an array",
        "map" if written.starts_with('{') => "a table",
        "map" => "a date",
        _ => "a value of another kind",
    };
    let wants = wanted_words(key.as_deref(), wanted);
    match key {
        Some(k) => format!(
            "`{}` = {} is {what}; it must be {wants}",
            show(&k),
            show_literal(written)
        ),
        None => format!("{} is {what}; it must be {wants}", show_literal(written)),
    }
}

/// serde's names for integer types.
const INTEGERS: &[&str] = &["i64", "u64", "i32", "u32", "u16", "u8", "usize"];

/// serde's name for the type a key takes, in words (with an example for
/// the keys whose values have units).
fn wanted_words(key: Option<&str>, wanted: &str) -> String {
    match wanted {
        "a string" => match key.and_then(example) {
            Some(e) => e.to_string(),
            None => "a string in quotes".into(),
        },
        w if INTEGERS.contains(&w) => "a whole number".into(),
        "f64" | "f32" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a sequence" => "an array, [ ... ]".into(),
        w if w.starts_with("struct ") || w == "a map" => match key {
            Some(k) => format!(
                "a table, written [{}] on a line of its own with its keys below",
                show(k)
            ),
            None => "a table".into(),
        },
        // A type serde names otherwise would be Rust's word for it.
        _ => "a value of the kind docs/SCENARIOS.md gives for it".into(),
    }
}

/// How the keys whose values carry units are written.
fn example(key: &str) -> Option<&'static str> {
    const DURATION: &[&str] = &[
        "duration",
        "sample_interval",
        "rtt",
        "start",
        "stop",
        "stagger",
        "think",
        "interval",
        "delay",
        "jitter",
        "target",
        "gap",
        "sample",
    ];
    Some(match key {
        k if DURATION.contains(&k) => "a duration in quotes, such as \"40ms\" or \"1.5s\"",
        "rate" => "a rate in quotes, such as \"100Mbit\"",
        "size" | "rwnd" | "request" | "response" => "a size in quotes, such as \"64KB\"",
        "cc" | "candidates" | "unavailable" => "an algorithm spec in quotes, such as \"cubic\"",
        "direction" => "\"upload\" or \"download\"",
        "delayed_ack" => "\"linux\" or \"off\"",
        "trace" => "a file's path in quotes",
        "address" => "an IP address in quotes, such as \"10.0.0.1\"",
        _ => return None,
    })
}

/// The text between the first pair of backticks in `s`.
fn backticked(s: &str) -> Option<&str> {
    let (_, rest) = s.split_once('`')?;
    rest.split_once('`').map(|(k, _)| k)
}

/// The line `at` is on, if it is a table header (`[link]`, `[[flow]]`).
fn header_line(text: &str, at: usize) -> Option<&str> {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[start..end].trim();
    line.starts_with('[').then_some(line)
}

/// Is the text at `at` a table header (`[link]`, `[[flow]]`)?
fn is_header(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..at].trim().is_empty() && text[at..].starts_with('[')
}

/// The header of the table that `at` is in (`[[flow]]`, `[link.up]`), or
/// `None` at the top level. A key inside a header (`foo` of `[link.foo]`)
/// belongs to the table above it (`[link]`).
fn table_at(text: &str, at: usize) -> Option<String> {
    let mut table = None;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let l = line.trim();
        let header = l.starts_with('[').then(|| {
            let end = match l.find(']') {
                Some(i) if l[i + 1..].starts_with(']') => i + 2,
                Some(i) => i + 1,
                None => l.len(),
            };
            &l[..end]
        });
        if start + line.len() > at {
            // The line `at` is on: in its own header, the parent table.
            if let (Some(h), false) = (header, is_header(text, at)) {
                let name = h.trim_matches(|c| c == '[' || c == ']');
                return name
                    .rsplit_once('.')
                    .map(|(parent, _)| format!("[{parent}]"));
            }
            return header.map(str::to_string).or(table);
        }
        if let Some(h) = header {
            table = Some(h.to_string());
        }
        start += line.len();
    }
    table
}

/// The key whose value starts at `at`: `key = value`, in a table or an
/// inline table; for an array's element, the array's key.
fn key_at(text: &str, at: usize) -> Option<String> {
    let before = text[..at].trim_end();
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    let lhs = match before.strip_suffix('=') {
        Some(b) => b.trim_end(),
        // An array element: the key of the line it is on.
        None => line.split_once('=')?.0.trim_end(),
    };
    let key = if let Some(q) = lhs.strip_suffix('"') {
        &q[q.rfind('"')? + 1..]
    } else {
        let start = lhs
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        &lhs[start..]
    };
    (!key.is_empty()).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_escape_their_quotes() {
        assert_eq!(quoted("a\"b"), "\"a\\\"b\"");
        assert_eq!(show_literal("\"a\nb\""), "\"a\\nb\"");
    }

    #[test]
    fn keys_and_tables_are_found_from_the_span() {
        let t = "a = 1\n[link]\nrate = 5\n[[flow]]\nx = { cc = 7 }\nlist = [\"a\", 3]\n";
        let at = |s: &str| t.find(s).unwrap();
        assert_eq!(key_at(t, at("5")), Some("rate".into()));
        assert_eq!(key_at(t, at("7")), Some("cc".into()));
        assert_eq!(key_at(t, at("3]")), Some("list".into()));
        assert_eq!(table_at(t, at("5")), Some("[link]".into()));
        assert_eq!(table_at(t, at("7")), Some("[[flow]]".into()));
        assert_eq!(table_at(t, at("[[flow]]")), Some("[[flow]]".into()));
        assert_eq!(table_at(t, 0), None);
        // A multi-byte character right before a key is not cut.
        let t = "x = { \"é\" = 1, éseed = 5 }";
        assert_eq!(key_at(t, t.find('5').unwrap()), Some("seed".into()));
        let t = "[link]\n[link.upp]\n[foo]\n";
        assert_eq!(table_at(t, t.find("upp").unwrap()), Some("[link]".into()));
        assert_eq!(table_at(t, t.find("foo").unwrap()), None);
    }
}
