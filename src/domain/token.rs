use super::ParseError;
use serde::Serialize;

/// An ownership generation. Positive and within `i64` so that every database stores it natively;
/// zero is reserved for "no generation accepted yet".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct FencingToken(i64);

impl FencingToken {
    /// Parses the `Fencing-Token` header: ASCII digits only, no sign, space or leading zero.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        if text.is_empty() {
            return Err(ParseError::new("Fencing-Token is empty"));
        }
        if !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseError::new(
                "Fencing-Token must be ASCII digits only (no sign, space or other characters)",
            ));
        }
        if text.starts_with('0') {
            return Err(ParseError::new(if text == "0" {
                "Fencing-Token must be at least 1"
            } else {
                "Fencing-Token must not have a leading zero"
            }));
        }
        let value: i64 = text
            .parse()
            .map_err(|_| ParseError::new("Fencing-Token exceeds 9223372036854775807"))?;
        Self::new(value)
    }

    pub fn new(value: i64) -> Result<Self, ParseError> {
        if value < 1 {
            return Err(ParseError::new("Fencing-Token must be at least 1"));
        }
        Ok(Self(value))
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for FencingToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_the_full_range() {
        assert_eq!(FencingToken::parse("1").unwrap().get(), 1);
        assert_eq!(FencingToken::parse("8").unwrap().get(), 8);
        assert_eq!(
            FencingToken::parse("9223372036854775807").unwrap().get(),
            i64::MAX
        );
    }

    #[test]
    fn rejects_everything_else() {
        for bad in [
            "",
            "0",
            "00",
            "07",
            "-1",
            "+1",
            " 1",
            "1 ",
            "1.0",
            "1e3",
            "0x10",
            "seven",
            "9223372036854775808",
            "99999999999999999999999",
            "١",
        ] {
            assert!(FencingToken::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    proptest! {
        #[test]
        fn round_trips_every_valid_token(value in 1i64..=i64::MAX) {
            prop_assert_eq!(FencingToken::parse(&value.to_string()).unwrap().get(), value);
        }

        #[test]
        fn never_accepts_text_that_is_not_its_canonical_form(text in "\\PC{0,24}") {
            if let Ok(token) = FencingToken::parse(&text) {
                prop_assert_eq!(token.get().to_string(), text);
            }
        }
    }
}
