//! `fencewatch lease acquire|renew|release|show`.

use super::answer::{document, report};
use crate::api::leases::{ttl_ms, AcquireRequest, ReleaseRequest, RenewRequest};
use crate::cli::{LeaseAction, LeaseArgs};
use std::process::ExitCode;

pub async fn run(args: LeaseArgs) -> anyhow::Result<ExitCode> {
    let client = super::connect(&args.connection)?;
    let answer = match args.action {
        LeaseAction::Acquire {
            name,
            holder,
            ttl,
            token_only,
        } => {
            let request = AcquireRequest {
                holder,
                ttl_ms: ttl_ms(ttl),
            };
            let answer = client.acquire(&name, &request).await?;
            if token_only && answer.is_success() {
                super::print_line(&document(&answer)["token"].to_string())?;
                return Ok(ExitCode::SUCCESS);
            }
            answer
        }
        LeaseAction::Renew {
            name,
            holder,
            token,
            ttl,
        } => {
            let request = RenewRequest {
                holder,
                token,
                ttl_ms: ttl.map(ttl_ms),
            };
            client.renew(&name, &request).await?
        }
        LeaseAction::Release {
            name,
            holder,
            token,
        } => {
            client
                .release(&name, &ReleaseRequest { holder, token })
                .await?
        }
        LeaseAction::Show { name } => client.show_lease(&name).await?,
    };
    Ok(ExitCode::from(report(&answer)?))
}
