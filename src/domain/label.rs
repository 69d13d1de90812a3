use super::ParseError;
use serde::Serialize;

/// Checks a short label: 1 to `max` characters of printable ASCII (space to tilde).
fn printable_ascii(text: &str, max: usize, what: &str) -> Result<(), ParseError> {
    if text.is_empty() {
        return Err(ParseError::new(format!("{what} is empty")));
    }
    if text.len() > max {
        return Err(ParseError::new(format!(
            "{what} is {} characters; the limit is {max}",
            text.len()
        )));
    }
    if !text.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return Err(ParseError::new(format!("{what} must be printable ASCII")));
    }
    Ok(())
}

pub(crate) fn parse_printable(text: &str, max: usize, what: &str) -> Result<String, ParseError> {
    printable_ascii(text, max, what).map(|()| text.to_owned())
}

/// The `Fencing-Owner` label a worker gives itself, kept in the audit so that operators can
/// tell who overlapped whom. Informational: it is never used to authorise anything.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct OwnerLabel(String);

impl OwnerLabel {
    pub const MAX_LEN: usize = 128;

    pub fn parse(text: &str) -> Result<Self, ParseError> {
        parse_printable(text, Self::MAX_LEN, "Fencing-Owner").map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The name of a lease of this daemon's authority.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct LeaseName(String);

impl LeaseName {
    pub const MAX_LEN: usize = 128;

    pub fn parse(text: &str) -> Result<Self, ParseError> {
        parse_printable(text, Self::MAX_LEN, "lease name").map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Names under `fencewatch/` belong to the daemon itself (its alert evaluator's lease is
    /// one): a client that could take one could switch the daemon's own duties off.
    pub fn is_reserved(&self) -> bool {
        self.0.starts_with(Self::RESERVED_PREFIX)
    }

    pub const RESERVED_PREFIX: &'static str = "fencewatch/";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemons_own_lease_names_are_reserved() {
        assert!(LeaseName::parse("fencewatch/alert-evaluator")
            .unwrap()
            .is_reserved());
        assert!(!LeaseName::parse("fencewatch").unwrap().is_reserved());
        assert!(!LeaseName::parse("jobs/fencewatch/x").unwrap().is_reserved());
    }

    #[test]
    fn owner_labels() {
        assert_eq!(OwnerLabel::parse("worker-a").unwrap().as_str(), "worker-a");
        assert!(OwnerLabel::parse(&"w".repeat(128)).is_ok());
        assert!(OwnerLabel::parse(&"w".repeat(129)).is_err());
        assert!(OwnerLabel::parse("").is_err());
        assert!(OwnerLabel::parse("tab\there").is_err());
        assert!(OwnerLabel::parse("é").is_err());
    }
}
