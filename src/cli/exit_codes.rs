//! The exit codes of `fencewatch lease` and `write`, so that shell workers can branch on the
//! kind of answer: one table, from which an answer's code is chosen (`for_answer`) and the
//! help text is written (`help`, which the manual pages and docs/api.md repeat; tests check
//! both).

use crate::api::problem::ProblemType;

/// One exit code: what it means, and the answers of the daemon it is given for.
#[derive(Debug, Clone, Copy)]
pub struct ExitCodeRow {
    pub code: u8,
    pub meaning: &'static str,
    pub given_for: GivenFor,
}

/// The answers an exit code is given for.
#[derive(Debug, Clone, Copy)]
pub enum GivenFor {
    /// Any `2xx`.
    Success,
    /// A problem of one of these types (at its status).
    Types(&'static [ProblemType]),
    /// Any answer with one of these statuses, whatever its type.
    Statuses(&'static [u16]),
    /// Every answer no other row covers, and no answer at all.
    Rest,
    /// A command line that does not parse: clap's own exit code, before anything is sent.
    BadCommandLine,
}

pub const EXIT_CODES: [ExitCodeRow; 10] = [
    ExitCodeRow {
        code: 0,
        meaning: "accepted (or replayed); lease granted, renewed, released or shown",
        given_for: GivenFor::Success,
    },
    ExitCodeRow {
        code: FAILED,
        meaning: "the daemon could not be reached or failed (5xx)",
        given_for: GivenFor::Rest,
    },
    ExitCodeRow {
        code: 2,
        meaning: "bad command line",
        given_for: GivenFor::BadCommandLine,
    },
    ExitCodeRow {
        code: 3,
        meaning: "stale token: a newer generation was accepted or issued",
        given_for: GivenFor::Types(&[ProblemType::StaleToken]),
    },
    ExitCodeRow {
        code: 4,
        meaning: "revision mismatch",
        given_for: GivenFor::Statuses(&[412]),
    },
    ExitCodeRow {
        code: 5,
        meaning: "idempotency key reused for another request",
        given_for: GivenFor::Statuses(&[422]),
    },
    ExitCodeRow {
        code: 6,
        meaning: "lease held by another, lost, or expired",
        given_for: GivenFor::Types(&[
            ProblemType::LeaseHeld,
            ProblemType::LeaseLost,
            ProblemType::LeaseExpired,
        ]),
    },
    ExitCodeRow {
        code: 7,
        meaning: "not allowed: no or wrong API key, forged token, resource out of the lease's \
                  scope, a Host the daemon does not answer to, too many refused requests",
        given_for: GivenFor::Statuses(&[401, 403, 421, 429]),
    },
    ExitCodeRow {
        code: 8,
        meaning: "invalid request or value too large",
        given_for: GivenFor::Statuses(&[400, 413]),
    },
    ExitCodeRow {
        code: 9,
        meaning: "not found",
        given_for: GivenFor::Statuses(&[404]),
    },
];

/// The code of an answer no other row covers (`GivenFor::Rest`).
const FAILED: u8 = 1;

/// The help text's width, in columns, beyond which a meaning continues on the next line.
const HELP_WIDTH: usize = 96;

impl GivenFor {
    fn covers(self, status: u16, problem: Option<ProblemType>) -> bool {
        match self {
            GivenFor::Success => (200..300).contains(&status),
            GivenFor::Types(types) => {
                problem.is_some_and(|kind| kind.status() == status && types.contains(&kind))
            }
            GivenFor::Statuses(statuses) => statuses.contains(&status),
            GivenFor::Rest | GivenFor::BadCommandLine => false,
        }
    }

    /// The answers as the help names them: `(409 lease-held, lease-lost)`, `(400, 413)`.
    fn named(self) -> Option<String> {
        match self {
            GivenFor::Types([first, others @ ..]) => {
                let slugs: Vec<&str> = std::iter::once(first)
                    .chain(others)
                    .map(|kind| kind.slug())
                    .collect();
                Some(format!("({} {})", first.status(), slugs.join(", ")))
            }
            GivenFor::Statuses(statuses) => {
                let statuses: Vec<String> = statuses.iter().map(u16::to_string).collect();
                Some(format!("({})", statuses.join(", ")))
            }
            GivenFor::Types([]) | GivenFor::Success | GivenFor::Rest | GivenFor::BadCommandLine => {
                None
            }
        }
    }
}

/// The exit code for an answer of the daemon: its status and, if it is a problem, its type.
pub fn for_answer(status: u16, problem: Option<ProblemType>) -> u8 {
    EXIT_CODES
        .iter()
        .find(|row| row.given_for.covers(status, problem))
        .map_or(FAILED, |row| row.code)
}

/// The `Exit codes:` section of `lease --help` and `write --help`.
pub fn help() -> String {
    let mut text = String::from("Exit codes:");
    for row in EXIT_CODES {
        let line = match row.given_for.named() {
            Some(named) => format!("{} {named}", row.meaning),
            None => row.meaning.to_owned(),
        };
        for wrapped in wrap(&format!("  {}  ", row.code), &line, HELP_WIDTH) {
            text.push('\n');
            text.push_str(&wrapped);
        }
    }
    text
}

/// `prefix` and `text` on lines of at most `width` columns where it can be (a word longer than
/// that stays whole), each line after the first indented to where the text began.
fn wrap(prefix: &str, text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = prefix.to_owned();
    let mut has_words = false;
    for word in text.split(' ') {
        if has_words && current.len() + 1 + word.len() > width {
            lines.push(std::mem::replace(&mut current, " ".repeat(prefix.len())));
            has_words = false;
        }
        if has_words {
            current.push(' ');
        }
        current.push_str(word);
        has_words = true;
    }
    lines.push(current);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProblemType::*;

    #[test]
    fn exit_codes_tell_the_kinds_apart() {
        assert_eq!(for_answer(201, None), 0);
        assert_eq!(for_answer(200, None), 0);
        assert_eq!(for_answer(204, None), 0);
        assert_eq!(for_answer(409, Some(StaleToken)), 3);
        assert_eq!(for_answer(412, Some(RevisionMismatch)), 4);
        assert_eq!(for_answer(422, Some(IdempotencyKeyReuse)), 5);
        assert_eq!(for_answer(409, Some(LeaseHeld)), 6);
        assert_eq!(for_answer(409, Some(LeaseLost)), 6);
        assert_eq!(for_answer(409, Some(LeaseExpired)), 6);
        assert_eq!(for_answer(403, Some(UnknownGeneration)), 7);
        assert_eq!(for_answer(401, Some(Unauthorized)), 7);
        assert_eq!(for_answer(400, Some(InvalidRequest)), 8);
        assert_eq!(for_answer(413, Some(PayloadTooLarge)), 8);
        assert_eq!(for_answer(404, Some(NotFound)), 9);
        assert_eq!(for_answer(503, Some(Unavailable)), 1);
    }

    /// A `409` the client cannot place (a newer daemon's type, or none) is a failure, not a
    /// stale token or a lost lease.
    #[test]
    fn an_unplaced_conflict_is_a_failure() {
        assert_eq!(for_answer(409, Some(Unknown)), 1);
        assert_eq!(for_answer(409, None), 1);
        assert_eq!(for_answer(500, Some(StaleToken)), 1);
    }

    /// Every problem the daemon sends has the code its status and type say.
    #[test]
    fn every_problem_type_has_one_code() {
        for kind in ProblemType::ALL {
            let covering: Vec<u8> = EXIT_CODES
                .iter()
                .filter(|row| row.given_for.covers(kind.status(), Some(kind)))
                .map(|row| row.code)
                .collect();
            assert!(covering.len() <= 1, "{kind:?} is covered by {covering:?}");
        }
    }

    #[test]
    fn the_codes_are_listed_once_in_order() {
        for (index, row) in EXIT_CODES.iter().enumerate() {
            assert_eq!(usize::from(row.code), index);
        }
    }

    #[test]
    fn the_help_names_each_code_with_its_answers() {
        let help = help();
        assert!(help.starts_with("Exit codes:\n  0  accepted (or replayed);"));
        assert!(help.contains(
            "\n  6  lease held by another, lost, or expired (409 lease-held, lease-lost, \
             lease-expired)\n"
        ));
        assert!(help.contains(
            "\n  7  not allowed: no or wrong API key, forged token, resource out of the lease's \
             scope, a Host\n     the daemon does not answer to, too many refused requests \
             (401, 403, 421, 429)\n"
        ));
        assert!(help.ends_with("\n  9  not found (404)"));
        assert!(help.lines().all(|line| line.len() <= HELP_WIDTH), "{help}");
    }

    /// docs/api.md shows the help's table as it is printed.
    #[test]
    fn the_api_reference_shows_the_table() {
        let indented: Vec<String> = help().lines().map(|line| format!("    {line}")).collect();
        let reference = include_str!("../../docs/api.md");
        assert!(
            reference.contains(&format!("\n{}\n", indented.join("\n"))),
            "docs/api.md does not show the exit codes as `fencewatch write --help` prints them:\n{}",
            indented.join("\n")
        );
    }
}
