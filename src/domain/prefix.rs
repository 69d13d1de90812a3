//! The one prefix rule of the daemon, pure: which names a prefix covers. API key scopes
//! (`write=PREFIX`, `lease=PREFIX`) and the lease scope (`serve --lease-scope prefix`, where a
//! lease's name is the prefix of the resources it fences) all ask it, so that `billing` means
//! the same thing wherever it is written.
//!
//! Names are paths of `/`-separated segments, and a prefix covers whole segments:
//!
//! - the empty prefix covers every name;
//! - a prefix `P` covers `P` itself and every name under it, `P/…`;
//! - a prefix ending in `/` (`P/`) covers the names under it, `P/…` (and `P/` itself);
//! - nothing else: `billing` covers neither `billingsecrets` nor `billing2/x`, and `billing/`
//!   never covers `billing2/`.
//!
//! Bytes, not characters: a key scope is matched against a percent-decoded path, which need
//! not be UTF-8, and `/` is one byte in UTF-8, never part of another character.

/// Whether `prefix` covers `name` (see the module's rule).
pub fn covers(prefix: &[u8], name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(prefix) else {
        return false;
    };
    prefix.is_empty() || prefix.ends_with(b"/") || rest.is_empty() || rest.starts_with(b"/")
}

/// `covers` for text.
pub fn covers_str(prefix: &str, name: &str) -> bool {
    covers(prefix.as_bytes(), name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn whole_segments_only() {
        for (prefix, name, covered) in [
            ("", "anything", true),
            ("", "", true),
            ("billing", "billing", true),
            ("billing", "billing/x", true),
            ("billing", "billing/x/y", true),
            ("billing", "billingsecrets", false),
            ("billing", "billing2/x", false),
            ("billing", "bill", false),
            ("billing", "other/billing", false),
            ("billing/", "billing/x", true),
            ("billing/", "billing/", true),
            ("billing/", "billing", false),
            ("billing/", "billing2/", false),
            ("billing/", "billing2/x", false),
            ("a/b", "a/b/c", true),
            ("a/b", "a/bc", false),
            ("jobs", "jobs2", false),
        ] {
            assert_eq!(
                covers_str(prefix, name),
                covered,
                "{prefix:?} covering {name:?}"
            );
        }
    }

    /// The rule restated on segments: the prefix's segments (its last one left out when it is
    /// the empty one after a trailing `/`) begin the name's, the last one whole, and a prefix
    /// ending in `/` needs the name to go on past it.
    fn by_segments(prefix: &str, name: &str) -> bool {
        if prefix.is_empty() {
            return true;
        }
        let names: Vec<&str> = name.split('/').collect();
        match prefix.strip_suffix('/') {
            Some(parent) => {
                let parents: Vec<&str> = parent.split('/').collect();
                names.len() > parents.len() && names[..parents.len()] == parents[..]
            }
            None => {
                let prefixes: Vec<&str> = prefix.split('/').collect();
                names.len() >= prefixes.len() && names[..prefixes.len()] == prefixes[..]
            }
        }
    }

    /// Names from a small alphabet, so that prefixes, near misses and slashes are common.
    fn name() -> impl Strategy<Value = String> {
        "[ab/]{0,8}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_000))]

        #[test]
        fn covers_is_the_segment_rule(prefix in name(), name in name()) {
            prop_assert_eq!(covers_str(&prefix, &name), by_segments(&prefix, &name));
        }

        #[test]
        fn a_prefix_covers_itself_and_what_is_under_it(prefix in name(), rest in name()) {
            let under = format!("{prefix}/{rest}");
            prop_assert!(covers_str(&prefix, &prefix));
            prop_assert!(covers_str(&prefix, &under));
        }

        /// A covered name begins with the prefix, and where the prefix ends inside a segment
        /// of the name, that segment is the prefix's own last one.
        #[test]
        fn nothing_past_the_end_of_a_segment(prefix in name(), name in name()) {
            if covers_str(&prefix, &name) {
                prop_assert!(name.starts_with(&prefix));
                let next = name.as_bytes().get(prefix.len());
                prop_assert!(
                    prefix.is_empty() || prefix.ends_with('/') || next.is_none_or(|b| *b == b'/')
                );
            }
        }

        /// `P/` covers exactly what `P` does, less `P` itself.
        #[test]
        fn a_trailing_slash_leaves_out_only_the_parent(parent in "[ab]{1,4}(/[ab]{1,3}){0,2}", name in name()) {
            let slashed = format!("{parent}/");
            prop_assert_eq!(
                covers_str(&slashed, &name),
                covers_str(&parent, &name) && name != parent
            );
        }
    }
}
