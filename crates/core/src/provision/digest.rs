//! Content digests over a canonical JSON encoding.

use std::fmt;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The SHA-256 digest of a definition's canonical JSON encoding ([`canonical_json`]), as 64 lowercase hex
/// characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// The digest of `value`'s canonical encoding.
    pub fn of_json(value: &Value) -> Self {
        Self::of_bytes(canonical_json(value).as_bytes())
    }

    /// The digest of raw bytes.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        let hash = Sha256::digest(bytes);
        Self(hash.iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// All 64 lowercase hex characters.
    pub fn hex(&self) -> &str {
        &self.0
    }

    /// The first 8 hex characters: the suffix of provisioned names.
    pub fn short(&self) -> &str {
        &self.0[..8]
    }

    /// Parses 64 hex characters (any case) back into a digest.
    pub fn parse(hex: &str) -> Option<Self> {
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| Self(hex.to_ascii_lowercase()))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.short())
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The canonical JSON encoding of `value`: object keys sorted by their UTF-8 bytes at every level, no
/// whitespace, strings escaped as `serde_json` escapes them, numbers as `serde_json` prints them. Independent of
/// the order fields were inserted in and of `serde_json`'s `preserve_order` feature.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (index, (key, value)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_change_the_digest() {
        let a = json!({"b": 1, "a": {"y": [1, {"q": null, "p": "x"}], "x": true}});
        let b = serde_json::from_str::<Value>(r#"{"a":{"x":true,"y":[1,{"p":"x","q":null}]},"b":1}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":true,"y":[1,{"p":"x","q":null}]},"b":1}"#);
        assert_eq!(Digest::of_json(&a), Digest::of_json(&b));
        assert_ne!(Digest::of_json(&a), Digest::of_json(&json!({"b": 2})));
    }

    #[test]
    fn a_known_digest() {
        // SHA-256 of the empty object `{}`.
        let digest = Digest::of_json(&json!({}));
        assert_eq!(digest.hex(), "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
        assert_eq!(digest.short(), "44136fa3");
        assert_eq!(Digest::parse(&digest.hex().to_uppercase()), Some(digest));
        assert_eq!(Digest::parse("xyz"), None);
    }
}
