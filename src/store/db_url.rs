//! What of a database URL may be shown, and what of it may reach the driver: the one place that
//! knows where a password can hide in one.
//!
//! A password can sit in the userinfo (`postgres://user:pw@host/db`, percent-encoded or not, with
//! or without a user) or in a parameter (`?password=…`, `&sslpassword=…`, a percent-encoded
//! name such as `pass%77ord`, or libpq's `key=value` form). Everything that prints or logs a URL
//! goes through [`redact_url`].

use percent_encoding::percent_decode_str;
use std::borrow::Cow;

/// What is shown instead of a secret.
const MASK: &str = "***";

/// The URL with every password replaced by `***`; the rest is kept so that a message still says
/// which database was meant. Where the shape is ambiguous (an unencoded `/`, `?` or `#` in a
/// password) it may hide more than the password, never less.
pub fn redact_url(url: &str) -> String {
    mask_parameters(&mask_userinfo(url))
}

/// `scheme://user:***@host…`. The authority ends at the first `/`, `?` or `#` and its userinfo
/// at the last `@` in it, as the driver's URL parser reads them. When the authority holds no
/// `@`, a password with an unencoded `/`, `?` or `#` may have cut it short: then the last `@`
/// anywhere ends what is taken for the userinfo.
fn mask_userinfo(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://") else {
        return Cow::Borrowed(url);
    };
    let start = scheme_end + 3;
    let rest = &url[start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@').or_else(|| rest.rfind('@')) else {
        return Cow::Borrowed(url);
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => Cow::Owned(format!("{}{user}:{MASK}{}", &url[..start], &rest[at..])),
        None => Cow::Borrowed(url),
    }
}

/// Masks the value of every parameter whose name, decoded, ends in `password` (any case). A
/// parameter starts the text or follows `?`, `&`, `;` or white space (libpq's `key=value`
/// form); its value runs to the next `&` or white space, or to its closing quote.
fn mask_parameters(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut at_start = true;
    while let Some(c) = rest.chars().next() {
        if at_start {
            if let Some((kept, after)) = masked_parameter(rest) {
                out.push_str(kept);
                out.push_str(MASK);
                rest = after;
                at_start = false;
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
        at_start = matches!(c, '?' | '&' | ';') || c.is_whitespace();
    }
    out
}

/// If `text` starts with a password parameter: what to keep of it (the name, `=` and any space
/// around it) and what follows its value.
fn masked_parameter(text: &str) -> Option<(&str, &str)> {
    let name_end = text
        .find(|c: char| "=&?;#".contains(c) || c.is_whitespace())
        .unwrap_or(text.len());
    let name = &text[..name_end];
    if !is_secret_name(name) {
        // A mistyped separator (`password:s3cret`) makes the value part of the name.
        let typed = name.to_ascii_lowercase().find("password")? + "password".len();
        return (typed < name.len() && !text[name_end..].starts_with('='))
            .then(|| (&text[..typed], &text[name_end..]));
    }
    let after_name = text[name_end..].trim_start();
    let after_equals = after_name.strip_prefix('=')?;
    let value = after_equals.trim_start();
    let kept = &text[..text.len() - value.len()];
    let value_len = match value.strip_prefix('\'') {
        // libpq's quoted value: to the closing quote, `\'` and `\\` escaped.
        Some(quoted) => {
            let mut escaped = false;
            let close = quoted.char_indices().find(|&(_, c)| {
                let closes = c == '\'' && !escaped;
                escaped = c == '\\' && !escaped;
                closes
            });
            close.map_or(value.len(), |(i, _)| i + 2)
        }
        None => value
            .find(|c: char| c == '&' || c.is_whitespace())
            .unwrap_or(value.len()),
    };
    Some((kept, &value[value_len..]))
}

/// A parameter name that names a password once decoded: `password`, `sslpassword`,
/// `pass%77ord`, `PASSWORD`.
fn is_secret_name(raw: &str) -> bool {
    let decoded = percent_decode_str(&raw.replace('+', " "))
        .decode_utf8_lossy()
        .trim()
        .to_ascii_lowercase();
    !decoded.is_empty() && decoded.ends_with("password")
}

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
    fn passwords_in_the_userinfo_are_masked() {
        for (url, shown) in [
            (
                "postgres://app:s3cret@db:5432/x",
                "postgres://app:***@db:5432/x",
            ),
            (
                "postgresql://app:s3cret@db/x?sslmode=require",
                "postgresql://app:***@db/x?sslmode=require",
            ),
            ("postgres://:s3cret@db/x", "postgres://:***@db/x"),
            (
                "postgres://app:p%40ss%2Fw%3Frd@db/x",
                "postgres://app:***@db/x",
            ),
            // Unencoded delimiters in the password: more is hidden, never less.
            ("postgres://app:pa/ss@db/x", "postgres://app:***@db/x"),
            ("postgres://app:pa?ss#w@db/x", "postgres://app:***@db/x"),
            ("postgres://app:p@ss@db/x", "postgres://app:***@db/x"),
            // An `@` in a parameter is not taken for the userinfo's end.
            (
                "postgres://app:s3cret@db/x?application_name=a@b",
                "postgres://app:***@db/x?application_name=a@b",
            ),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn password_parameters_are_masked() {
        for (url, shown) in [
            (
                "postgres://app@db/x?password=s3cret",
                "postgres://app@db/x?password=***",
            ),
            (
                "postgres://db/x?user=app&password=s3cret&sslmode=disable",
                "postgres://db/x?user=app&password=***&sslmode=disable",
            ),
            (
                "postgres://db/x?sslpassword=s3cret&PASSWORD=s3cret",
                "postgres://db/x?sslpassword=***&PASSWORD=***",
            ),
            (
                "postgres://db/x?pass%77ord=s3cret",
                "postgres://db/x?pass%77ord=***",
            ),
            (
                "host=db user=app password=s3cret dbname=x",
                "host=db user=app password=*** dbname=x",
            ),
            (
                "host=db password = s3cret dbname=x",
                "host=db password = *** dbname=x",
            ),
            (
                "postgres://db/x?password:s3cret&sslmode=disable",
                "postgres://db/x?password***&sslmode=disable",
            ),
            (
                "postgres://app:a@db/x?password=b",
                "postgres://app:***@db/x?password=***",
            ),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        // libpq's quoting: the whole quoted value goes.
        assert_eq!(
            redact_url("host=db password='s3 cr\\'et' dbname=x"),
            "host=db password=*** dbname=x"
        );
    }

    #[test]
    fn urls_without_secrets_are_shown_as_they_are() {
        for url in [
            "postgres://postgres@127.0.0.1/test",
            "postgres://db/x?options=-c%20search_path%3Dfw&sslmode=disable",
            "sqlite://fencewatch.db",
            "sqlite:///var/lib/fencewatch/x.db?mode=rwc",
            "mysql://nobody@localhost/x",
            "postgres://db/x?application_name=a@b",
        ] {
            assert_eq!(redact_url(url), url);
        }
        // The price of never showing less: with no `@` in the authority, a port followed by
        // an `@` further on reads as a password with an unencoded `/` (`app:12/ab@db`).
        assert_eq!(
            redact_url("postgres://db:5432/x?application_name=a@b"),
            "postgres://db:***@b"
        );
    }

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
