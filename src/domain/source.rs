//! The name a watched database goes by (`serve --watch [NAME=]URL`): the `source` of its rows
//! and overlaps in the API, a label of its metrics and alerts, the key of its position. Letters,
//! digits, `_`, `.` and `-` only, so that it reads the same in a Prometheus label, an Alertmanager
//! group key, a terminal and a URL, and never carries a secret of the URL it came from.

use super::ParseError;
use serde::Serialize;
use std::fmt;

/// A watched database's name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SourceName(String);

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

impl SourceName {
    pub const MAX_LEN: usize = 64;

    /// A name given on the command line: refused unless it is 1 to 64 of the allowed
    /// characters.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        if text.is_empty() || text.len() > Self::MAX_LEN || !text.chars().all(allowed) {
            return Err(ParseError::new(format!(
                "source name {text:?} must be 1 to {} letters, digits, '_', '.' or '-'",
                Self::MAX_LEN
            )));
        }
        Ok(Self(text.to_owned()))
    }

    /// A name made from what the database calls itself (its name, a file's stem): every other
    /// character becomes `_`, cut to the limit; `watched` if nothing is left.
    pub fn derived(text: &str) -> Self {
        let name: String = text
            .chars()
            .map(|c| if allowed(c) { c } else { '_' })
            .take(Self::MAX_LEN)
            .collect();
        if name.is_empty() {
            Self("watched".into())
        } else {
            Self(name)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `--watch NAME=URL` or `--watch URL`: the name, if given, and the URL. Text before the first
/// `=` is a name only if it holds no `:` or `/` (a URL's query may hold `=` itself).
pub fn split_watch_arg(arg: &str) -> Result<(Option<SourceName>, &str), ParseError> {
    match arg.split_once('=') {
        Some((name, url)) if !name.contains([':', '/']) => {
            if url.is_empty() {
                return Err(ParseError::new(format!(
                    "--watch {name}= names no database URL"
                )));
            }
            Ok((Some(SourceName::parse(name)?), url))
        }
        _ => Ok((None, arg)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_given_or_derived_and_urls_keep_their_equals_signs() {
        let (name, url) = split_watch_arg("shop=postgres://app:pw@db/shop").unwrap();
        assert_eq!(name.unwrap().as_str(), "shop");
        assert_eq!(url, "postgres://app:pw@db/shop");
        let (name, url) = split_watch_arg("postgres://db/x?options=-c%20a%3Db").unwrap();
        assert_eq!((name, url), (None, "postgres://db/x?options=-c%20a%3Db"));
        assert_eq!(
            split_watch_arg("sqlite:///srv/orders.db").unwrap(),
            (None, "sqlite:///srv/orders.db")
        );
        assert!(split_watch_arg("bad name=sqlite://x.db").is_err());
        assert!(split_watch_arg("shop=").is_err());
        assert!(SourceName::parse(&"x".repeat(65)).is_err());
        assert_eq!(SourceName::derived("my db/ü").as_str(), "my_db__");
        assert_eq!(SourceName::derived("").as_str(), "watched");
        assert_eq!(SourceName::derived(&"y".repeat(99)).as_str().len(), 64);
    }
}
