//! What a message for a person must be (issue 16): one line, no raw
//! control characters, short, and none of Rust's or serde's words for its
//! own types and errors. The hostile-input tests and the fuzz targets
//! (crates/fuzz-targets) judge every refusal with [`unclear`].

/// What no message may show: serde's and Rust's words for types and
/// errors, Debug output, and the OS error number `io::Error` appends.
pub const INTERNALS: &[&str] = &[
    "invalid type",
    "expected struct",
    "i64",
    "u32",
    "i128",
    "Section",
    "Some(",
    "Position",
    "{ pos",
    "os error",
    "Utf8",
    "expected a sequence",
    "map,",
];

/// The longest message a refusal may be, in bytes: input echoed back is
/// cut well before this.
pub const MAX_MESSAGE: usize = 600;

/// Why `message` is not one clear line, or `None` if it is. `input` is
/// what the message answers: a word of [`INTERNALS`] the input itself
/// holds may be echoed (a key named `u32` is quoted back as the unknown
/// key it is); pass "" to allow none.
pub fn unclear(message: &str, input: &str) -> Option<String> {
    if message.lines().count() != 1 || message.contains('\n') {
        return Some(format!("not one line: {message:?}"));
    }
    if message.chars().any(char::is_control) {
        return Some(format!("a raw control character: {message:?}"));
    }
    if message.len() >= MAX_MESSAGE {
        return Some(format!(
            "{} bytes, longer than {MAX_MESSAGE}: {message}",
            message.len()
        ));
    }
    INTERNALS
        .iter()
        .find(|w| message.contains(**w) && !input.contains(**w))
        .map(|w| format!("shows `{w}`: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internals_are_unclear_unless_the_input_holds_them() {
        assert_eq!(unclear("s.toml line 1: unknown key `x`", ""), None);
        assert!(unclear("invalid type: map, expected a sequence", "").is_some());
        assert!(unclear("cannot read t: Permission denied (os error 13)", "").is_some());
        assert_eq!(unclear("unknown key `u32`", "u32 = 1"), None);
        assert!(unclear("unknown key `u32`", "x = 1").is_some());
        assert!(unclear("two\nlines", "").is_some());
        assert!(unclear("a \u{1b}[2J escape", "").is_some());
        assert!(unclear(&"x".repeat(MAX_MESSAGE), "").is_some());
        assert!(unclear("", "").is_some());
    }
}
