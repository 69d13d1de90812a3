use super::ParseError;
use serde::Serialize;

/// A resource's revision: 0 before its first accepted write, then +1 per accepted write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Revision(i64);

impl Revision {
    pub const NEVER_WRITTEN: Revision = Revision(0);

    pub fn new(value: i64) -> Result<Self, ParseError> {
        if value < 0 {
            return Err(ParseError::new("revision must not be negative"));
        }
        Ok(Self(value))
    }

    /// Parses `If-Match`: one entity tag holding the revision, `"3"` (the bare `3` is accepted
    /// too). Weak tags, `*` and lists are refused rather than guessed at.
    pub fn parse_if_match(value: &str) -> Result<Self, ParseError> {
        let inner = match value.strip_prefix('"') {
            Some(rest) => rest.strip_suffix('"').ok_or_else(|| {
                ParseError::new("If-Match has an opening quote but no closing quote")
            })?,
            None => value,
        };
        let invalid = || {
            ParseError::new(format!(
                "If-Match must be one revision as an entity tag, like \"3\" (got {value:?})"
            ))
        };
        if inner.is_empty()
            || !inner.bytes().all(|b| b.is_ascii_digit())
            || (inner.len() > 1 && inner.starts_with('0'))
        {
            return Err(invalid());
        }
        inner.parse::<i64>().map(Self).map_err(|_| invalid())
    }

    pub fn get(self) -> i64 {
        self.0
    }

    pub fn next(self) -> Self {
        Self(self.0 + 1)
    }

    /// The strong entity tag for this revision.
    pub fn etag(self) -> String {
        format!("\"{}\"", self.0)
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entity_tags() {
        assert_eq!(Revision::parse_if_match("\"3\"").unwrap().get(), 3);
        assert_eq!(
            Revision::parse_if_match("\"0\"").unwrap(),
            Revision::NEVER_WRITTEN
        );
        assert_eq!(Revision::parse_if_match("12").unwrap().get(), 12);
        assert_eq!(Revision::parse_if_match("\"3\"").unwrap().etag(), "\"3\"");
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        for bad in [
            "",
            "\"\"",
            "*",
            "W/\"3\"",
            "\"3\", \"4\"",
            "\"-1\"",
            "\"03\"",
            "\"3",
            "x",
            "\"99999999999999999999\"",
        ] {
            assert!(Revision::parse_if_match(bad).is_err(), "{bad:?}");
        }
    }
}
