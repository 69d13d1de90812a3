//! Alert rules and receivers, from the `[alerts]` section of `serve --config FILE` (TOML).

use crate::domain::Outcome;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Why an alert config was refused. Each variant's text is its own part of the message; the
/// cause follows it in the error chain (`serve` prints the chain joined by ": ").
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A parse error, said with the file it came from.
    #[error("{}", path.display())]
    InFile {
        path: PathBuf,
        #[source]
        source: Box<RulesError>,
    },
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error("{what}")]
    Duration {
        what: &'static str,
        #[source]
        source: humantime::DurationError,
    },
    #[error("{0} must be positive")]
    NotPositive(&'static str),
    #[error("webhook url {0:?} must be http:// or https://")]
    WebhookScheme(String),
    #[error("rule {rule}: unknown outcome {outcome:?}")]
    UnknownOutcome { rule: String, outcome: String },
    #[error("rule names must be unique")]
    DuplicateRuleName,
}

/// One rule: more than `threshold` writes with one of `outcomes` within `window`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub name: String,
    pub outcomes: Vec<Outcome>,
    pub threshold: u64,
    pub window: Duration,
    pub for_: Duration,
    pub keep_firing_for: Duration,
    /// One alert per resource instead of one over all resources.
    pub per_resource: bool,
    pub labels: BTreeMap<String, String>,
    pub summary: String,
}

impl Rule {
    /// The rule in one line, as the demo states the rules it runs with.
    pub fn describe(&self) -> String {
        let outcomes: Vec<&str> = self.outcomes.iter().map(|o| o.as_str()).collect();
        let scope = match self.per_resource {
            true => "to one resource",
            false => "over all resources",
        };
        let span = |d: Duration| humantime::format_duration(d).to_string();
        format!(
            "{}: more than {} {} writes {scope} in {}, for {}, kept firing {} after",
            self.name,
            self.threshold,
            outcomes.join(" or "),
            span(self.window),
            span(self.for_),
            span(self.keep_firing_for),
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    pub url: String,
    pub timeout: Duration,
    pub max_retries: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlertConfig {
    pub evaluation_interval: Duration,
    /// How often a firing alert is sent again, so that an Alertmanager never times it out.
    pub resend_interval: Duration,
    pub rules: Vec<Rule>,
    /// Receivers of the Alertmanager webhook payload (version 4).
    pub webhooks: Vec<Webhook>,
    /// An Alertmanager to post alerts to (`/api/v2/alerts`).
    pub alertmanager: Option<Webhook>,
}

impl Default for AlertConfig {
    fn default() -> Self {
        Self {
            evaluation_interval: Duration::from_secs(1),
            resend_interval: Duration::from_secs(60),
            rules: default_rules(),
            webhooks: Vec::new(),
            alertmanager: None,
        }
    }
}

/// Stale-owner spikes, over all resources and per resource.
pub fn default_rules() -> Vec<Rule> {
    let rule = |name: &str, threshold, per_resource, summary: &str| Rule {
        name: name.to_owned(),
        outcomes: vec![Outcome::Stale, Outcome::Superseded],
        threshold,
        window: Duration::from_secs(60),
        for_: Duration::from_secs(15),
        keep_firing_for: Duration::from_secs(60),
        per_resource,
        labels: BTreeMap::from([("severity".to_owned(), "page".to_owned())]),
        summary: summary.to_owned(),
    };
    vec![
        rule(
            "StaleOwnerSpike",
            20,
            false,
            "More than 20 writes from superseded owners in a minute",
        ),
        rule(
            "StaleOwnerSpikePerResource",
            10,
            true,
            "More than 10 writes from superseded owners to one resource in a minute",
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    alerts: Option<AlertsSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AlertsSection {
    evaluation_interval: Option<String>,
    resend_interval: Option<String>,
    rules: Option<Vec<RuleSection>>,
    #[serde(default)]
    webhooks: Vec<WebhookSection>,
    alertmanager: Option<WebhookSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSection {
    name: String,
    outcomes: Option<Vec<String>>,
    threshold: u64,
    window: String,
    #[serde(rename = "for")]
    for_: Option<String>,
    keep_firing_for: Option<String>,
    #[serde(default)]
    per_resource: bool,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    summary: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookSection {
    url: String,
    timeout: Option<String>,
    max_retries: Option<u32>,
}

fn duration(text: &str, what: &'static str) -> Result<Duration, RulesError> {
    humantime::parse_duration(text).map_err(|source| RulesError::Duration { what, source })
}

fn webhook(section: WebhookSection) -> Result<Webhook, RulesError> {
    if !(section.url.starts_with("http://") || section.url.starts_with("https://")) {
        return Err(RulesError::WebhookScheme(section.url));
    }
    Ok(Webhook {
        timeout: duration(
            section.timeout.as_deref().unwrap_or("5s"),
            "webhook timeout",
        )?,
        max_retries: section.max_retries.unwrap_or(5),
        url: section.url,
    })
}

impl AlertConfig {
    /// Parses a config file's text; the built-in rules apply when it names none.
    pub fn parse(text: &str) -> Result<Self, RulesError> {
        let file: File = toml::from_str(text)?;
        let Some(section) = file.alerts else {
            return Ok(Self::default());
        };
        let mut config = Self::default();
        if let Some(interval) = section.evaluation_interval {
            config.evaluation_interval = duration(&interval, "evaluation_interval")?;
            if config.evaluation_interval.is_zero() {
                return Err(RulesError::NotPositive("evaluation_interval"));
            }
        }
        if let Some(interval) = section.resend_interval {
            config.resend_interval = duration(&interval, "resend_interval")?;
            if config.resend_interval.is_zero() {
                return Err(RulesError::NotPositive("resend_interval"));
            }
        }
        if let Some(rules) = section.rules {
            config.rules = rules
                .into_iter()
                .map(|rule| {
                    let outcomes = match rule.outcomes {
                        None => vec![Outcome::Stale, Outcome::Superseded],
                        Some(names) => names
                            .iter()
                            .map(|name| {
                                Outcome::parse(name).ok_or_else(|| RulesError::UnknownOutcome {
                                    rule: rule.name.clone(),
                                    outcome: name.clone(),
                                })
                            })
                            .collect::<Result<_, _>>()?,
                    };
                    Ok(Rule {
                        window: duration(&rule.window, "window")?,
                        for_: duration(rule.for_.as_deref().unwrap_or("0s"), "for")?,
                        keep_firing_for: duration(
                            rule.keep_firing_for.as_deref().unwrap_or("0s"),
                            "keep_firing_for",
                        )?,
                        summary: rule
                            .summary
                            .unwrap_or_else(|| format!("{} is over its threshold", rule.name)),
                        name: rule.name,
                        outcomes,
                        threshold: rule.threshold,
                        per_resource: rule.per_resource,
                        labels: rule.labels,
                    })
                })
                .collect::<Result<_, RulesError>>()?;
            let mut names: Vec<&str> = config.rules.iter().map(|r| r.name.as_str()).collect();
            names.sort();
            if names.windows(2).any(|pair| pair[0] == pair[1]) {
                return Err(RulesError::DuplicateRuleName);
            }
        }
        config.webhooks = section
            .webhooks
            .into_iter()
            .map(webhook)
            .collect::<Result<_, _>>()?;
        config.alertmanager = section.alertmanager.map(webhook).transpose()?;
        Ok(config)
    }

    pub fn load(path: &std::path::Path) -> Result<Self, RulesError> {
        let text = std::fs::read_to_string(path).map_err(|source| RulesError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|source| RulesError::InFile {
            path: path.to_owned(),
            source: Box::new(source),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_says_what_fires_it() {
        let rules = default_rules();
        assert_eq!(
            rules[0].describe(),
            "StaleOwnerSpike: more than 20 stale or superseded writes over all resources in \
             1m, for 15s, kept firing 1m after"
        );
        assert!(rules[1]
            .describe()
            .contains("more than 10 stale or superseded writes to one resource"));
    }

    #[test]
    fn the_example_config_parses() {
        let text = include_str!("../../../assets/fencewatch.example.toml");
        let config = AlertConfig::parse(text).unwrap();
        assert_eq!(config.rules.len(), 2);
        assert!(config.rules.iter().any(|r| r.per_resource));
        assert_eq!(config.webhooks.len(), 1);
        assert_eq!(config.resend_interval, Duration::from_secs(60));
    }

    #[test]
    fn defaults_and_errors() {
        assert_eq!(AlertConfig::parse("").unwrap(), AlertConfig::default());
        assert_eq!(AlertConfig::default().rules.len(), 2);
        assert_eq!(
            AlertConfig::default().resend_interval,
            Duration::from_secs(60)
        );
        let parsed = AlertConfig::parse("[alerts]\nresend_interval = \"1s 500ms\"").unwrap();
        assert_eq!(parsed.resend_interval, Duration::from_millis(1500));
        for bad in [
            "[alerts]\nbogus = 1",
            "[[alerts.rules]]\nname = \"x\"\nthreshold = 1\nwindow = \"soon\"",
            "[[alerts.rules]]\nname = \"x\"\nthreshold = 1\nwindow = \"1m\"\noutcomes = [\"nope\"]",
            "[[alerts.webhooks]]\nurl = \"ftp://x\"",
            "[alerts]\nevaluation_interval = \"0s\"",
            "[alerts]\nresend_interval = \"0s\"",
            "[alerts]\nresend_interval = \"often\"",
        ] {
            assert!(AlertConfig::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_error_chain_reads_as_one_message() {
        // `serve` prints the chain joined by ": ", as the messages were once written out whole.
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("fencewatch.toml");
        std::fs::write(&path, "[alerts]\nevaluation_interval = \"soon\"").unwrap();
        let cause = humantime::parse_duration("soon").unwrap_err();
        let error = anyhow::Error::from(AlertConfig::load(&path).unwrap_err());
        assert_eq!(
            format!("{error:#}"),
            format!("{}: evaluation_interval: {cause}", path.display())
        );
        let missing = folder.path().join("missing.toml");
        let error = anyhow::Error::from(AlertConfig::load(&missing).unwrap_err());
        assert!(
            format!("{error:#}").starts_with(&format!("cannot read {}: ", missing.display())),
            "{error:#}"
        );
        let error = AlertConfig::parse("[[alerts.webhooks]]\nurl = \"ftp://x\"").unwrap_err();
        assert_eq!(
            error.to_string(),
            "webhook url \"ftp://x\" must be http:// or https://"
        );
    }
}
