//! What of a database URL may reach the driver. What of one may be *shown* is `crate::redact`'s.

use crate::redact::is_secret_name;
use percent_encoding::percent_decode_str;

/// The query parameters of a PostgreSQL URL that the driver reads (sqlx 0.8's
/// `PgConnectOptions`). The driver logs any other parameter *with its value* as it ignores it,
/// so such parameters are taken out before the URL reaches it.
const DRIVER_PARAMETERS: &[&str] = &[
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "statement-cache-capacity",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "options",
];

/// A PostgreSQL URL as handed to the driver: its parameters that the driver does not read taken
/// out, and their names, fit to be shown (a name that is not a plain word is replaced by a
/// placeholder: a mistyped `password:…` would otherwise show its value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverUrl {
    pub url: String,
    pub ignored: Vec<String>,
}

/// Splits the URL's query into the parameters the driver reads and the names of the others.
pub fn driver_url(url: &str) -> DriverUrl {
    let (before_fragment, fragment) = match url.find('#') {
        Some(hash) => url.split_at(hash),
        None => (url, ""),
    };
    let Some((base, query)) = before_fragment.split_once('?') else {
        return DriverUrl {
            url: url.to_owned(),
            ignored: Vec::new(),
        };
    };
    let mut kept = Vec::new();
    let mut ignored = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let raw_name = pair.split_once('=').map_or(pair, |(name, _)| name);
        let name = percent_decode_str(&raw_name.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned();
        let read = DRIVER_PARAMETERS.contains(&name.as_str())
            || (name.starts_with("options[") && name.ends_with(']'));
        if read {
            kept.push(pair);
        } else if is_plain_word(&name) && !is_secret_name(&name) {
            ignored.push(name);
        } else if is_secret_name(&name) {
            ignored.push(name.to_ascii_lowercase());
        } else {
            ignored.push("(a malformed parameter)".to_owned());
        }
    }
    let query = kept.join("&");
    let url = match query.is_empty() {
        true => format!("{base}{fragment}"),
        false => format!("{base}?{query}{fragment}"),
    };
    DriverUrl { url, ignored }
}

fn is_plain_word(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_gets_only_the_parameters_it_reads() {
        assert_eq!(
            driver_url("postgres://app@db/x?sslpassword=s3cret&sslmode=disable&connect_timeout=5"),
            DriverUrl {
                url: "postgres://app@db/x?sslmode=disable".into(),
                ignored: vec!["sslpassword".into(), "connect_timeout".into()],
            }
        );
        assert_eq!(
            driver_url("postgres://db/x?pass%77ord=s3cret&options=-c%20a%3Db&options[x]=y"),
            DriverUrl {
                url: "postgres://db/x?pass%77ord=s3cret&options=-c%20a%3Db&options[x]=y".into(),
                ignored: vec![],
            }
        );
        let typo = driver_url("postgres://db/x?password:s3cret");
        assert_eq!(typo.url, "postgres://db/x");
        assert_eq!(typo.ignored, ["(a malformed parameter)"]);
        assert!(typo.ignored.iter().all(|name| !name.contains("s3cret")));
        assert_eq!(
            driver_url("postgres://db/x").url,
            "postgres://db/x",
            "no query, nothing changed"
        );
    }
}
