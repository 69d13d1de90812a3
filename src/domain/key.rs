use super::ParseError;
use percent_encoding::percent_decode_str;
use serde::Serialize;

/// A resource's identity: 1 to 512 bytes of UTF-8 without control characters. `/` is allowed
/// so that keys can be hierarchical (`accounts/totals`) and lease scopes can be prefixes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ResourceKey(String);

impl ResourceKey {
    pub const MAX_BYTES: usize = 512;

    /// Parses a key as it appears in a URL path or query: percent-encoded.
    pub fn from_percent_encoded(raw: &str) -> Result<Self, ParseError> {
        let bytes: Vec<u8> = percent_decode_str(raw).collect();
        let text = String::from_utf8(bytes).map_err(|_| {
            ParseError::new("resource key is not valid UTF-8 after percent-decoding")
        })?;
        Self::parse(text)
    }

    /// Parses an already decoded key.
    pub fn parse(text: impl Into<String>) -> Result<Self, ParseError> {
        let text = text.into();
        if text.is_empty() {
            return Err(ParseError::new("resource key is empty"));
        }
        if text.len() > Self::MAX_BYTES {
            return Err(ParseError::new(format!(
                "resource key is {} bytes; the limit is {}",
                text.len(),
                Self::MAX_BYTES
            )));
        }
        if let Some(position) = text.chars().position(char::is_control) {
            return Err(ParseError::new(format!(
                "resource key has a control character at position {position}"
            )));
        }
        Ok(Self(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decodes_and_keeps_slashes() {
        let key = ResourceKey::from_percent_encoded("accounts/totals").unwrap();
        assert_eq!(key.as_str(), "accounts/totals");
        let key = ResourceKey::from_percent_encoded("a%2Fb%20c%C3%A9").unwrap();
        assert_eq!(key.as_str(), "a/b cé");
    }

    #[test]
    fn enforces_length_in_bytes_after_decoding() {
        assert!(ResourceKey::parse("k".repeat(512)).is_ok());
        assert!(ResourceKey::parse("k".repeat(513)).is_err());
        // 256 two-byte characters are 512 bytes; one more is over.
        assert!(ResourceKey::parse("é".repeat(256)).is_ok());
        assert!(ResourceKey::parse("é".repeat(257)).is_err());
        // 171 percent-encoded bytes are short on the wire but the rule counts decoded bytes.
        assert!(ResourceKey::from_percent_encoded(&"%41".repeat(513)).is_err());
    }

    #[test]
    fn rejects_empty_control_and_invalid_utf8() {
        for raw in [
            "", "a%00b", "a%0Ab", "%7F", "a%C2%85b", "%FF", "%C3", "%E2%82",
        ] {
            assert!(
                ResourceKey::from_percent_encoded(raw).is_err(),
                "{raw:?} was accepted"
            );
        }
    }

    #[test]
    fn leaves_malformed_escapes_as_literal_text() {
        // A `%` not followed by two hex digits is not an escape (WHATWG URL behaviour).
        assert_eq!(
            ResourceKey::from_percent_encoded("100%").unwrap().as_str(),
            "100%"
        );
        assert_eq!(
            ResourceKey::from_percent_encoded("%zz").unwrap().as_str(),
            "%zz"
        );
    }

    proptest! {
        #[test]
        fn accepted_keys_obey_the_rules(text in "\\PC{0,40}|.{0,8}") {
            match ResourceKey::parse(text.clone()) {
                Ok(key) => {
                    prop_assert!(!key.as_str().is_empty());
                    prop_assert!(key.as_str().len() <= 512);
                    prop_assert!(!key.as_str().chars().any(char::is_control));
                }
                Err(_) => prop_assert!(
                    text.is_empty() || text.len() > 512 || text.chars().any(char::is_control)
                ),
            }
        }
    }
}
