//! A streaming writer of pretty-printed JSON into a byte buffer, producing
//! exactly what `serde_json::to_writer_pretty` produces (two-space indent,
//! `"key": value`, `[]` and `{}` when empty, shortest round-trip floats,
//! `null` for non-finite ones, serde_json's string escapes), without a
//! value tree, serde's visitors or a write call per token: results files
//! are mostly numbers under fixed keys, and writing them is a copy of the
//! key and a number conversion each.

use crate::decimal::{push_int, push_shortest};

/// The constant that [`JsonWriter::key_prefixed`] takes for `key` in an
/// object nested three deep (the records of a results file):
/// `record_key!("t")` is `",\n      \"t\": "`.
macro_rules! record_key {
    ($key:literal) => {
        concat!(",\n      \"", $key, "\": ")
    };
}
pub(crate) use record_key;

pub struct JsonWriter<'a> {
    out: &'a mut Vec<u8>,
    /// `,\n` and the current indentation: what precedes an element (the
    /// first one without the comma), kept whole so that each key costs one
    /// copy.
    sep: Vec<u8>,
    /// No element written yet in the innermost open object or array.
    empty: bool,
}

impl<'a> JsonWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> JsonWriter<'a> {
        let mut sep = Vec::with_capacity(64);
        sep.extend_from_slice(b",\n");
        JsonWriter {
            out,
            sep,
            empty: true,
        }
    }

    /// The bytes written so far (the caller may take them away: what
    /// follows does not depend on them).
    pub fn buf(&mut self) -> &mut Vec<u8> {
        self.out
    }

    /// The separator and indentation before an element.
    fn next(&mut self) {
        let skip = usize::from(self.empty);
        self.out.extend_from_slice(&self.sep[skip..]);
        self.empty = false;
    }

    fn open(&mut self, bracket: u8) {
        self.out.push(bracket);
        self.sep.extend_from_slice(b"  ");
        self.empty = true;
    }

    fn close(&mut self, bracket: u8) {
        self.sep.truncate(self.sep.len() - 2);
        if !self.empty {
            self.out.extend_from_slice(&self.sep[1..]);
        }
        self.out.push(bracket);
        // The container just closed is an element of its parent.
        self.empty = false;
    }

    pub fn begin_object(&mut self) {
        self.open(b'{');
    }

    pub fn end_object(&mut self) {
        self.close(b'}');
    }

    pub fn begin_array(&mut self) {
        self.open(b'[');
    }

    pub fn end_array(&mut self) {
        self.close(b']');
    }

    /// Starts the next array element; a value must follow.
    pub fn element(&mut self) {
        self.next();
    }

    /// Writes a key given whole as `,\n`, the indentation of the current
    /// depth, `"key": ` (see [`record_key!`]): one copy of a constant, the
    /// cheapest way to write the many keys of a long series. The comma is
    /// dropped for the first element.
    #[inline(always)]
    pub fn key_prefixed(&mut self, prefixed: &'static str) {
        debug_assert!(prefixed.as_bytes().starts_with(&self.sep));
        let skip = usize::from(self.empty);
        self.out.extend_from_slice(&prefixed.as_bytes()[skip..]);
        self.empty = false;
    }

    /// Writes `"key": `; a value must follow. Keys are Rust field names,
    /// which need no escaping.
    pub fn key(&mut self, key: &str) {
        debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
        self.next();
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\": ");
    }

    pub fn u64(&mut self, v: u64) {
        push_int(self.out, v);
    }

    pub fn f64(&mut self, v: f64) {
        if v.is_finite() {
            push_shortest(self.out, v);
        } else {
            self.null();
        }
    }

    pub fn opt_f64(&mut self, v: Option<f64>) {
        match v {
            Some(v) => self.f64(v),
            None => self.null(),
        }
    }

    pub fn null(&mut self) {
        self.out.extend_from_slice(b"null");
    }

    /// A string, escaped as serde_json escapes (quote, backslash, control
    /// characters; everything else as is).
    pub fn str(&mut self, s: &str) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.out.push(b'"');
        let bytes = s.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let esc: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                0x08 => b"\\b",
                0x0c => b"\\f",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0..=0x1f => &[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[(b >> 4) as usize],
                    HEX[(b & 15) as usize],
                ],
                _ => continue,
            };
            self.out.extend_from_slice(&bytes[start..i]);
            self.out.extend_from_slice(esc);
            start = i + 1;
        }
        self.out.extend_from_slice(&bytes[start..]);
        self.out.push(b'"');
    }

    /// A key given whole (see [`JsonWriter::key_prefixed`]) and its value.
    #[inline(always)]
    pub fn at_u64(&mut self, prefixed: &'static str, v: u64) {
        self.key_prefixed(prefixed);
        self.u64(v);
    }

    #[inline(always)]
    pub fn at_f64(&mut self, prefixed: &'static str, v: f64) {
        self.key_prefixed(prefixed);
        self.f64(v);
    }

    #[inline(always)]
    pub fn at_str(&mut self, prefixed: &'static str, v: &str) {
        self.key_prefixed(prefixed);
        self.str(v);
    }

    /// `"key": value` for the common cases.
    pub fn field_u64(&mut self, key: &str, v: u64) {
        self.key(key);
        self.u64(v);
    }

    pub fn field_f64(&mut self, key: &str, v: f64) {
        self.key(key);
        self.f64(v);
    }

    /// `"key": [...]`, one element per item, each written by `each`.
    pub fn field_array<T>(&mut self, key: &str, items: &[T], mut each: impl FnMut(&mut Self, &T)) {
        self.key(key);
        self.begin_array();
        for it in items {
            self.element();
            each(self, it);
        }
        self.end_array();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Inner {
        a: u64,
        b: f64,
        c: Option<f64>,
        s: String,
    }

    #[derive(Serialize)]
    struct Outer {
        x: f64,
        empty: Vec<Inner>,
        items: Vec<Inner>,
        nested: Vec<Vec<u64>>,
    }

    fn inner(j: &mut JsonWriter, v: &Inner) {
        j.begin_object();
        j.field_u64("a", v.a);
        j.field_f64("b", v.b);
        j.key("c");
        j.opt_f64(v.c);
        j.key("s");
        j.str(&v.s);
        j.end_object();
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let v = Outer {
            x: 30.0,
            empty: vec![],
            items: vec![
                Inner {
                    a: u64::MAX,
                    b: 3334647.466666667,
                    c: None,
                    s: "cubic:beta=717".into(),
                },
                Inner {
                    a: 0,
                    b: f64::NAN,
                    c: Some(-1e-7),
                    s: "quote\" back\\ nl\n tab\t bell\u{7} del\u{7f} é".into(),
                },
                Inner {
                    a: 7,
                    b: f64::INFINITY,
                    c: Some(1e21),
                    s: String::new(),
                },
            ],
            nested: vec![vec![], vec![1, 2], vec![3]],
        };
        let mut out = Vec::new();
        let mut j = JsonWriter::new(&mut out);
        j.begin_object();
        j.field_f64("x", v.x);
        j.field_array("empty", &v.empty, inner);
        j.field_array("items", &v.items, inner);
        j.field_array("nested", &v.nested, |j, xs| {
            j.begin_array();
            for &x in xs {
                j.element();
                j.u64(x);
            }
            j.end_array();
        });
        j.end_object();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string_pretty(&v).unwrap()
        );
    }

    #[test]
    fn prefixed_keys_write_what_plain_keys_write_three_deep() {
        let write = |prefixed: bool| {
            let mut out = Vec::new();
            let mut j = JsonWriter::new(&mut out);
            j.begin_object();
            j.key("series");
            j.begin_array();
            for i in 0..2 {
                j.element();
                j.begin_object();
                if prefixed {
                    j.at_u64(record_key!("n"), i);
                    j.at_f64(record_key!("x"), 0.5);
                    j.at_str(record_key!("s"), "a");
                } else {
                    j.field_u64("n", i);
                    j.field_f64("x", 0.5);
                    j.key("s");
                    j.str("a");
                }
                j.end_object();
            }
            j.end_array();
            j.end_object();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(write(true), write(false));
        assert!(write(true).contains("{\n      \"n\": 1,\n      \"x\": 0.5,"));
    }

    #[test]
    fn deep_nesting_indents_every_level() {
        let mut out = Vec::new();
        let mut j = JsonWriter::new(&mut out);
        for _ in 0..20 {
            j.begin_array();
            j.element();
        }
        j.u64(1);
        for _ in 0..20 {
            j.end_array();
        }
        let mut v = serde_json::json!(1);
        for _ in 0..20 {
            v = serde_json::json!([v]);
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string_pretty(&v).unwrap()
        );
    }
}
