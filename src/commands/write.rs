//! `fencewatch write KEY --token N < value`.

use super::answer::report;
use crate::cli::WriteArgs;
use crate::client::WriteRequest;
use anyhow::Context;
use std::io::Read;
use std::process::ExitCode;

pub async fn run(args: WriteArgs) -> anyhow::Result<ExitCode> {
    let client = super::connect(&args.connection)?;
    let mut value = Vec::new();
    std::io::stdin()
        .read_to_end(&mut value)
        .context("failed to read the value from stdin")?;
    let request = WriteRequest {
        token: &args.token,
        idempotency_key: args.idempotency_key.as_deref(),
        if_match: args.if_match,
        lease: args.lease.as_deref(),
        owner: args.owner.as_deref(),
        content_type: args.content_type.as_deref(),
        body: value,
    };
    let answer = client.write(&args.key, request).await?;
    Ok(ExitCode::from(report(&answer)?))
}
