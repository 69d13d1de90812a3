//! What of a URL may be shown: the one place that knows where a secret can hide in one. Pure
//! text in, text out, so that every layer that prints a URL (the store's database URLs, the
//! client's daemon URL, the commands) uses this one module and names no other layer for it.
//!
//! A password can sit in the userinfo (`postgres://user:pw@host/db`, percent-encoded or not, with
//! or without a user) or in a parameter (`?password=…`, `&sslpassword=…`, a percent-encoded
//! name such as `pass%77ord`, or libpq's `key=value` form). Everything that prints or logs a
//! database URL goes through [`redact_url`]; the daemon's URL given to a client command goes
//! through [`redact_userinfo`], which hides the whole userinfo (an HTTP URL's user name may be
//! a token).

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

/// The URL with its whole userinfo (`user`, `user:password`, a token in the user's place)
/// replaced by `***`, and its password parameters masked as [`redact_url`] does: for the daemon's
/// URL that a client command was given (`http://user:secret@host`), where the user name may be
/// the secret.
pub fn redact_userinfo(url: &str) -> String {
    let masked = match userinfo(url) {
        Some((start, at)) => Cow::Owned(format!("{}{MASK}{}", &url[..start], &url[at..])),
        None => Cow::Borrowed(url),
    };
    mask_parameters(&masked)
}

/// Where the userinfo is: from just after `://` to its `@` (byte offsets into `url`). The
/// authority ends at the first `/`, `?` or `#` and its userinfo at the last `@` in it, as the
/// driver's URL parser reads them. When the authority holds no `@`, a password with an
/// unencoded `/`, `?` or `#` may have cut it short: then the last `@` anywhere ends what is taken
/// for the userinfo.
fn userinfo(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end]
        .rfind('@')
        .or_else(|| rest.rfind('@'))?;
    Some((start, start + at))
}

/// `scheme://user:***@host…` (see `userinfo` for where it is taken to end).
fn mask_userinfo(url: &str) -> Cow<'_, str> {
    let Some((start, at)) = userinfo(url) else {
        return Cow::Borrowed(url);
    };
    match url[start..at].split_once(':') {
        Some((user, _)) => Cow::Owned(format!("{}{user}:{MASK}{}", &url[..start], &url[at..])),
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
pub fn is_secret_name(raw: &str) -> bool {
    let decoded = percent_decode_str(&raw.replace('+', " "))
        .decode_utf8_lossy()
        .trim()
        .to_ascii_lowercase();
    !decoded.is_empty() && decoded.ends_with("password")
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
    fn a_client_url_loses_its_whole_userinfo() {
        for (url, shown) in [
            (
                "http://user:s3cret@127.0.0.1:7420",
                "http://***@127.0.0.1:7420",
            ),
            (
                "https://t0ken@fencewatch.internal/",
                "https://***@fencewatch.internal/",
            ),
            ("http://u:p%40ss@host:1/x?y=1", "http://***@host:1/x?y=1"),
            ("http://u:pa/ss@host/x", "http://***@host/x"),
            (
                "http://host/x?password=s3cret",
                "http://host/x?password=***",
            ),
            ("http://127.0.0.1:7420", "http://127.0.0.1:7420"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redact_userinfo(url), shown, "{url}");
        }
    }
}
