//! `audit report ID`: one incident's postmortem, as text, Markdown, JSON or an HTML page.

use crate::cli::ReportFormat;
use crate::domain::incident::IncidentReport;
use crate::domain::incident_render;
use crate::store::Store;
use anyhow::Context;
use chrono::{DateTime, Utc};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

pub(super) async fn run(
    store: &Store,
    id: i64,
    format: ReportFormat,
    output: Option<&Path>,
    now: DateTime<Utc>,
) -> anyhow::Result<ExitCode> {
    let report = crate::app::incident::report(store, id, now)
        .await?
        .ok_or_else(|| anyhow::anyhow!("no incident {id}: `audit incidents` lists them"))?;
    write(&report, format, output)
}

/// Prints the report in `format`, to `output` or standard output.
pub(super) fn write(
    report: &IncidentReport,
    format: ReportFormat,
    output: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let text = render(report, format)?;
    match output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("failed to write {}", path.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

pub fn render(report: &IncidentReport, format: ReportFormat) -> anyhow::Result<String> {
    Ok(match format {
        ReportFormat::Text => incident_render::text(report),
        ReportFormat::Md => incident_render::markdown(report),
        ReportFormat::Html => incident_render::html(report),
        ReportFormat::Json => format!("{}\n", serde_json::to_string(report)?),
    })
}
