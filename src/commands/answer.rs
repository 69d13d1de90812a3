//! What `fencewatch lease` and `write` do with the daemon's answer: print it as it came, and
//! exit with the code `cli::exit_codes` gives its kind, so that shell workers can branch on it.

use crate::cli::exit_codes;
use crate::client::Answer;
use serde_json::Value;

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
    let code = exit_codes::for_answer(answer.status, answer.problem().kind);
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
