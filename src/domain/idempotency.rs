use super::ParseError;
use serde::Serialize;

/// Identifies one logical operation (`Idempotency-Key`), separate from the ownership generation:
/// one owner performs many operations with the same token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const MAX_LEN: usize = 255;

    /// Parses the header value, quoted (`"op-17"`) or bare (`op-17`); both name the same key.
    pub fn parse_header(value: &str) -> Result<Self, ParseError> {
        let inner = match value.strip_prefix('"') {
            Some(rest) => rest.strip_suffix('"').ok_or_else(|| {
                ParseError::new("Idempotency-Key has an opening quote but no closing quote")
            })?,
            None => value,
        };
        if inner.contains('"') {
            return Err(ParseError::new("Idempotency-Key must not contain a quote"));
        }
        super::label::parse_printable(inner, Self::MAX_LEN, "Idempotency-Key").map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_bare_are_the_same_key() {
        assert_eq!(
            IdempotencyKey::parse_header("\"op-17\"").unwrap(),
            IdempotencyKey::parse_header("op-17").unwrap()
        );
    }

    #[test]
    fn bounds_and_characters() {
        assert!(IdempotencyKey::parse_header(&"k".repeat(255)).is_ok());
        assert!(IdempotencyKey::parse_header(&format!("\"{}\"", "k".repeat(255))).is_ok());
        assert!(IdempotencyKey::parse_header(&"k".repeat(256)).is_err());
        for bad in ["", "\"\"", "\"", "\"op", "a\"b", "op\u{7f}", "ключ"] {
            assert!(IdempotencyKey::parse_header(bad).is_err(), "{bad:?}");
        }
    }
}
