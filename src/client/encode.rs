//! How names travel in a request's URL: the one encoding every client of the daemon uses.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Path characters kept as they are: unreserved ones and `/`, so that `accounts/totals`
/// stays readable.
const KEY_PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// A resource key as the path after `/v1/resources/`: its `/`s separate nothing there.
pub fn encode_path(key: &str) -> String {
    utf8_percent_encode(key, KEY_PATH).to_string()
}

/// One path segment or query value: a lease name may contain `/` too, but in a segment it
/// would end the name.
pub fn encode_segment(text: &str) -> String {
    utf8_percent_encode(text, NON_ALPHANUMERIC).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_slashes_and_lose_everything_else() {
        assert_eq!(encode_path("accounts/totals"), "accounts/totals");
        assert_eq!(encode_path("a b?c#%"), "a%20b%3Fc%23%25");
        assert_eq!(encode_segment("jobs/a"), "jobs%2Fa");
    }
}
