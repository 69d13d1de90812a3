use super::Outcome;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One row of the audit: one write attempt and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    #[serde(
        serialize_with = "serialize_rfc3339_micros",
        deserialize_with = "deserialize_rfc3339"
    )]
    pub at: DateTime<Utc>,
    pub resource: String,
    pub outcome: Outcome,
    pub token: Option<i64>,
    /// The resource's highest accepted generation after the decision.
    pub highest_token: i64,
    /// The resource's revision after the decision.
    pub revision: i64,
    pub idempotency_key: Option<String>,
    pub expected_revision: Option<i64>,
    pub owner: Option<String>,
    pub lease: Option<String>,
    pub body_sha256: Option<String>,
    pub body_len: Option<i64>,
    pub detail: Option<String>,
    /// The authenticated caller (its API key's name), when keys are configured.
    pub caller: Option<String>,
    /// The watched database the row comes from (`serve --watch`), whose audit `id` is that
    /// database's; `None` for this daemon's own rows. Not part of the chain's encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl AuditEntry {
    /// The recorded fields, from `at` to `caller`, as elements of `tuple`: the order both the
    /// chain's canonical encoding and the batch statements' audit rows use.
    pub fn serialize_recorded_fields<T: serde::ser::SerializeTuple>(
        &self,
        tuple: &mut T,
    ) -> Result<(), T::Error> {
        tuple.serialize_element(&self.at.timestamp_micros())?;
        tuple.serialize_element(&self.resource)?;
        tuple.serialize_element(self.outcome.as_str())?;
        tuple.serialize_element(&self.token)?;
        tuple.serialize_element(&self.highest_token)?;
        tuple.serialize_element(&self.revision)?;
        tuple.serialize_element(&self.idempotency_key)?;
        tuple.serialize_element(&self.expected_revision)?;
        tuple.serialize_element(&self.owner)?;
        tuple.serialize_element(&self.lease)?;
        tuple.serialize_element(&self.body_sha256)?;
        tuple.serialize_element(&self.body_len)?;
        tuple.serialize_element(&self.detail)?;
        tuple.serialize_element(&self.caller)
    }
}

pub fn format_rfc3339_micros(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A stored time (microseconds since the epoch) as RFC 3339; none out of range.
pub fn rfc3339_of_micros(us: i64) -> Option<String> {
    DateTime::from_timestamp_micros(us).map(|at| format_rfc3339_micros(&at))
}

pub fn serialize_rfc3339_micros<S: Serializer>(
    at: &DateTime<Utc>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format_rfc3339_micros(at))
}

/// Reads what `serialize_rfc3339_micros` wrote (any RFC 3339 time, in fact).
pub fn deserialize_rfc3339<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<DateTime<Utc>, D::Error> {
    let text = String::deserialize(deserializer)?;
    DateTime::parse_from_rfc3339(&text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(serde::de::Error::custom)
}

/// An optional time as `serialize_rfc3339_micros` writes one, or `null`.
pub fn serialize_optional_rfc3339_micros<S: Serializer>(
    at: &Option<DateTime<Utc>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => serialize_rfc3339_micros(at, serializer),
        None => serializer.serialize_none(),
    }
}

/// The optional form of `deserialize_rfc3339`: `null` is `None`.
pub fn deserialize_optional_rfc3339<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<DateTime<Utc>>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| {
            DateTime::parse_from_rfc3339(&text)
                .map(|at| at.with_timezone(&Utc))
                .map_err(serde::de::Error::custom)
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_with_microseconds() {
        let at = DateTime::from_timestamp_micros(1_764_474_006_000_001).unwrap();
        assert_eq!(format_rfc3339_micros(&at), "2025-11-30T03:40:06.000001Z");
    }
}
