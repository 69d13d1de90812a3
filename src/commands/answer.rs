//! What `fencewatch lease` and `write` do with the daemon's answer: print it as it came, and
//! exit with a code that says what kind of answer it was, so that shell workers can branch on
//! it (the codes are listed in the command line's help).

use crate::api::problem::ProblemType;
use crate::client::Answer;
use serde_json::Value;

/// The exit code for an answer of the daemon.
pub fn exit_code(status: u16, problem_type: Option<ProblemType>) -> u8 {
    match (status, problem_type) {
        (200..=299, _) => 0,
        (409, Some(ProblemType::StaleToken)) => 3,
        (412, _) => 4,
        (422, _) => 5,
        (
            409,
            Some(ProblemType::LeaseHeld | ProblemType::LeaseLost | ProblemType::LeaseExpired),
        ) => 6,
        (401 | 403 | 421 | 429, _) => 7,
        (400 | 413, _) => 8,
        (404, _) => 9,
        _ => 1,
    }
}

/// The answer's body as a JSON document to print: any JSON the daemon sent, else its text as
/// a JSON string; nothing for an empty body.
pub fn document(answer: &Answer) -> Value {
    if answer.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&answer.body).unwrap_or_else(|_| Value::String(answer.body.clone()))
    }
}

/// Prints the answer (on stdout when it was a success, else on stderr) and returns its exit
/// code.
pub fn report(answer: &Answer) -> anyhow::Result<u8> {
    let code = exit_code(answer.status, answer.problem().kind);
    let body = document(answer);
    if !body.is_null() {
        let line = body.to_string();
        if code == 0 {
            super::print_line(&line)?;
        } else {
            eprintln!("{line}");
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_tell_the_kinds_apart() {
        assert_eq!(exit_code(201, None), 0);
        assert_eq!(exit_code(200, None), 0);
        assert_eq!(exit_code(204, None), 0);
        assert_eq!(exit_code(409, Some(ProblemType::StaleToken)), 3);
        assert_eq!(exit_code(412, Some(ProblemType::RevisionMismatch)), 4);
        assert_eq!(exit_code(422, Some(ProblemType::IdempotencyKeyReuse)), 5);
        assert_eq!(exit_code(409, Some(ProblemType::LeaseHeld)), 6);
        assert_eq!(exit_code(409, Some(ProblemType::LeaseLost)), 6);
        assert_eq!(exit_code(409, Some(ProblemType::LeaseExpired)), 6);
        assert_eq!(exit_code(403, Some(ProblemType::UnknownGeneration)), 7);
        assert_eq!(exit_code(401, Some(ProblemType::Unauthorized)), 7);
        assert_eq!(exit_code(400, Some(ProblemType::InvalidRequest)), 8);
        assert_eq!(exit_code(413, Some(ProblemType::PayloadTooLarge)), 8);
        assert_eq!(exit_code(404, Some(ProblemType::NotFound)), 9);
        assert_eq!(exit_code(503, Some(ProblemType::Unavailable)), 1);
    }
}
