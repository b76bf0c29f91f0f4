//! Named policies from `[vars] POLICIES`: each is a configuration in the core's JSON schema plus
//! the policy's own fields. Callers name a policy; they never choose capacities.
//!
//! ```json
//! { "api": { "version": 2, "failure": "degrade", "strategy": "PROPORTIONALLY",
//!            "bandwidths": [{ "id": "burst", "capacity": 50,
//!                             "refill": { "kind": "greedy", "tokens": 10, "period": "1s" } }] } }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde::de::{Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::failure::FailureMode;
use crate::{BucketConfiguration, ConfigurationSpec, DurationSpec, TokensInheritanceStrategy};

/// The fields a policy adds to the configuration schema (camelCase in JSON).
const OWN_FIELDS: [&str; 7] = ["version", "strategy", "failure", "shadow", "timeout", "idleGrace", "legacyHeaders"];

/// The longest `timeout`: a limiter that takes longer has failed for any caller.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest policy name.
const MAX_NAME_LEN: usize = 64;

/// A named policy: what a bucket is configured with and how the worker treats it.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The name callers use.
    pub name: String,
    /// Raised to replace the configuration of existing buckets (implicit replacement).
    pub version: u64,
    /// The limits.
    pub configuration: BucketConfiguration,
    /// How tokens carry over when `version` rises. Default `AS_IS`: the tokens the bucket had,
    /// at most the new capacity (time since the last refill then counts at the new rate; see
    /// [`TokensInheritanceStrategy`]).
    pub strategy: TokensInheritanceStrategy,
    /// What to do when the bucket's Durable Object cannot be reached.
    pub failure: FailureMode,
    /// Decide and log, but never reject.
    pub shadow: bool,
    /// How long a decision waits for the bucket's Durable Object before `failure` decides
    /// instead; `None` waits as long as the runtime does.
    pub timeout: Option<Duration>,
    /// How long an idle bucket is kept after it has refilled to the maximum (default 60 s).
    pub idle_grace: Duration,
    /// Also send `X-RateLimit-Limit/-Remaining/-Reset`.
    pub legacy_headers: bool,
}

/// The policy's own fields as JSON writes them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Fields {
    version: Option<u64>,
    strategy: Option<TokensInheritanceStrategy>,
    failure: Option<FailureMode>,
    shadow: Option<bool>,
    timeout: Option<DurationSpec>,
    idle_grace: Option<DurationSpec>,
    legacy_headers: Option<bool>,
}

/// Every policy, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policies(BTreeMap<String, Policy>);

impl Policies {
    /// Reads `POLICIES`: a JSON object of policies by name.
    ///
    /// # Errors
    /// A message naming the policy and what is wrong with it.
    pub fn parse(json: &str) -> Result<Self, String> {
        let Value::Object(entries) = serde_json::from_str(json).map_err(|e| format!("POLICIES is not JSON: {e}"))?
        else {
            return Err("POLICIES must be a JSON object of policies by name".into());
        };
        serde_json::from_str::<Unrepeated>(json).map_err(|e| format!("POLICIES: {e}"))?;
        let mut policies = BTreeMap::new();
        for (name, value) in entries {
            let policy = Policy::parse(&name, value).map_err(|e| format!("policy {name:?}: {e}"))?;
            policies.insert(name, policy);
        }
        Ok(Policies(policies))
    }

    /// The policy called `name`.
    pub fn get(&self, name: &str) -> Option<&Policy> {
        self.0.get(name)
    }

    /// Every policy, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Policy> {
        self.0.values()
    }
}

impl Policy {
    fn parse(name: &str, value: Value) -> Result<Self, String> {
        check_name(name)?;
        let Value::Object(mut configuration) = value else {
            return Err("a policy must be a JSON object".into());
        };
        let own: Map<String, Value> =
            OWN_FIELDS.iter().filter_map(|&field| Some((field.to_owned(), configuration.remove(field)?))).collect();
        let fields: Fields = serde_json::from_value(Value::Object(own)).map_err(|e| e.to_string())?;
        let spec =
            ConfigurationSpec::deserialize(&configuration).map_err(|e| configuration_error(&e, &configuration))?;
        let configuration = BucketConfiguration::try_from(spec).map_err(|e| format!("{}: {e}", e.code()))?;
        check_bandwidth_ids(name, &configuration)?;
        let idle_grace = match fields.idle_grace {
            Some(spec) => duration("idleGrace", &spec)?,
            None => Duration::from_secs(60),
        };
        let timeout = fields.timeout.map(|spec| timeout(&spec)).transpose()?;
        Ok(Policy {
            name: name.to_owned(),
            version: fields.version.unwrap_or(1),
            configuration,
            strategy: fields.strategy.unwrap_or(TokensInheritanceStrategy::AsIs),
            failure: fields.failure.unwrap_or(FailureMode::Open),
            shadow: fields.shadow.unwrap_or(false),
            timeout,
            idle_grace,
            legacy_headers: fields.legacy_headers.unwrap_or(false),
        })
    }
}

/// The duration `spec` of the policy field `field`.
fn duration(field: &str, spec: &DurationSpec) -> Result<Duration, String> {
    let nanos = spec.to_nanos().map_err(|e| format!("{field}: {e}"))?;
    let nanos = u64::try_from(nanos).map_err(|_| format!("{field}: longer than 2^64 ns (584 years)"))?;
    Ok(Duration::from_nanos(nanos))
}

/// `timeout`: whole milliseconds (a timer's unit), from 1 ms to [`MAX_TIMEOUT`].
fn timeout(spec: &DurationSpec) -> Result<Duration, String> {
    let timeout = duration("timeout", spec)?;
    if timeout.subsec_nanos() % 1_000_000 != 0 {
        return Err(format!("timeout: {timeout:?} is not a whole number of milliseconds"));
    }
    if timeout.is_zero() || timeout > MAX_TIMEOUT {
        return Err(format!("timeout: {timeout:?} is outside 1ms to {}s", MAX_TIMEOUT.as_secs()));
    }
    Ok(timeout)
}

/// What is wrong with a policy's `configuration` fields. serde names the configuration's own
/// fields as the expected ones; an unknown field at the top could also have been meant as one of
/// the policy's, so the message names those too.
fn configuration_error(error: &serde_json::Error, configuration: &Map<String, Value>) -> String {
    let message = error.to_string();
    let unknown = message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')).map(|(name, _)| name);
    match unknown {
        // `bandwidths` is the configuration's own: unknown only inside a bandwidth.
        Some(name) if name != "bandwidths" && configuration.contains_key(name) => {
            format!("configuration: {message}, or a policy field: {}", OWN_FIELDS.join(", "))
        }
        _ => format!("configuration: {message}"),
    }
}

/// Any JSON value, read only to refuse an object with a repeated member: a `Value` keeps the last
/// one silently, so a second `"failure": "open"` would turn a closed policy open, and a second
/// policy of one name would replace the first. (TOML refuses repeated keys; the JSON form needs
/// this.)
struct Unrepeated;

impl<'de> Deserialize<'de> for Unrepeated {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Unrepeated)
    }
}

impl<'de> Visitor<'de> for Unrepeated {
    type Value = Unrepeated;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(Unrepeated)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(Unrepeated)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(Unrepeated)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(Unrepeated)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(Unrepeated)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(Unrepeated)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Self, A::Error> {
        while items.next_element::<Unrepeated>()?.is_some() {}
        Ok(Unrepeated)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Self, A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(name) = members.next_key::<String>()? {
            if seen.contains(&name) {
                return Err(A::Error::custom(format!("{name:?} appears twice in one object")));
            }
            members.next_value::<Unrepeated>()?;
            seen.insert(name);
        }
        Ok(Unrepeated)
    }
}

/// Names appear in URLs, logs and header items: keep them plain.
fn check_name(name: &str) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > MAX_NAME_LEN || !name.chars().all(plain) {
        return Err(format!("a policy name is 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 - _ ."));
    }
    Ok(())
}

/// Bandwidth ids become Structured Field strings in the `RateLimit` headers: printable ASCII.
fn check_bandwidth_ids(name: &str, configuration: &BucketConfiguration) -> Result<(), String> {
    let bandwidths = configuration.bandwidths();
    for id in bandwidths.iter().filter_map(|b| b.id()) {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
            return Err(format!("bandwidth id {id:?} must be printable ASCII (it names a RateLimit header item)"));
        }
    }
    let names: Vec<String> =
        bandwidths.iter().enumerate().map(|(i, b)| item_name(name, b.id(), i, bandwidths.len())).collect();
    for (i, name) in names.iter().enumerate() {
        if let Some(j) = names[..i].iter().position(|earlier| earlier == name) {
            return Err(format!(
                "bandwidths {} and {} would both be named {name:?} in the RateLimit headers: give them distinct ids",
                j + 1,
                i + 1
            ));
        }
    }
    Ok(())
}

/// The `RateLimit` item name of bandwidth `index` of `count`: its id, else the policy's name (one
/// bandwidth) or `{policy}-N` (N from 1). Unique within a policy (checked when it is read).
pub fn item_name(policy: &str, id: Option<&str>, index: usize, count: usize) -> String {
    match (id, count) {
        (Some(id), _) => id.to_owned(),
        (None, 1) => policy.to_owned(),
        (None, _) => format!("{policy}-{}", index + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"{
        "api": { "version": 3, "failure": "degrade", "shadow": true, "timeout": "250ms", "idleGrace": "5s", "legacyHeaders": true,
                 "strategy": "PROPORTIONALLY",
                 "bandwidths": [
                   { "id": "burst", "capacity": 50, "refill": { "kind": "greedy", "tokens": 10, "period": "1s" } },
                   { "id": "hourly", "capacity": 1000, "refill": { "kind": "intervally", "tokens": 1000, "period": "1h" } } ] },
        "plain": { "bandwidths": [ { "capacity": 5, "refill": { "kind": "greedy", "tokens": 5, "period": 1000 } } ] }
    }"#;

    #[test]
    fn generated_item_names_never_collide_with_ids() {
        let clash = r#"{ "api": { "bandwidths": [
            { "capacity": 10, "refill": { "kind": "greedy", "tokens": 5, "period": "1s" } },
            { "id": "api-1", "capacity": 100, "refill": { "kind": "greedy", "tokens": 100, "period": "1m" } } ] } }"#;
        let error = Policies::parse(clash).unwrap_err();
        assert!(error.contains("bandwidths 1 and 2") && error.contains("\"api-1\""), "{error}");
        assert_eq!(item_name("api", None, 1, 2), "api-2");
        assert_eq!(item_name("api", None, 0, 1), "api");
    }

    #[test]
    fn policy_names_are_one_to_sixty_four_plain_characters() {
        let policy = r#"{"bandwidths": [{"capacity": 1, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}}]}"#;
        let named = |name: &str| Policies::parse(&format!(r#"{{"{name}": {policy}}}"#));
        assert!(named(&"a".repeat(MAX_NAME_LEN)).is_ok());
        assert!(named("v1.login_burst-2").is_ok());
        for refused in [String::new(), "a".repeat(MAX_NAME_LEN + 1)] {
            assert!(named(&refused).unwrap_err().contains("policy name"), "{refused:?}");
        }
    }

    #[test]
    fn reads_the_configuration_schema_and_the_policy_fields() {
        let policies = Policies::parse(TWO).unwrap();
        let api = policies.get("api").unwrap();
        assert_eq!(api.version, 3);
        assert_eq!(api.configuration.bandwidths().len(), 2);
        assert_eq!(api.configuration.bandwidths()[1].capacity(), 1000);
        assert_eq!(api.strategy, TokensInheritanceStrategy::Proportionally);
        assert_eq!((api.failure, api.shadow, api.legacy_headers), (FailureMode::Degrade, true, true));
        assert_eq!(api.idle_grace, Duration::from_secs(5));
        assert_eq!(api.timeout, Some(Duration::from_millis(250)));
        assert_eq!(policies.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["api", "plain"]);
    }

    #[test]
    fn defaults_are_documented_ones() {
        let plain = Policies::parse(TWO).unwrap().get("plain").unwrap().clone();
        assert_eq!(plain.version, 1);
        assert_eq!(plain.strategy, TokensInheritanceStrategy::AsIs);
        assert_eq!((plain.failure, plain.shadow, plain.legacy_headers), (FailureMode::Open, false, false));
        assert_eq!(plain.idle_grace, Duration::from_secs(60));
        assert_eq!(plain.timeout, None, "waits as long as the runtime does");
    }

    #[test]
    fn a_timeout_is_whole_milliseconds_from_one_to_sixty_seconds() {
        let with = |timeout: &str| {
            let policy = format!(
                r#"{{"p": {{"timeout": {timeout}, "bandwidths": [{{"capacity": 1, "refill": {{"kind": "greedy", "tokens": 1, "period": "1s"}}}}]}}}}"#
            );
            Policies::parse(&policy).map(|p| p.get("p").unwrap().timeout.unwrap())
        };
        assert_eq!(with("1").unwrap(), Duration::from_millis(1));
        assert_eq!(with(r#""1m""#).unwrap(), MAX_TIMEOUT);
        assert_eq!(with(r#""1s 500ms""#).unwrap(), Duration::from_millis(1500));
        for (refused, why) in [
            ("0", "outside 1ms to 60s"),
            (r#""60001ms""#, "outside 1ms to 60s"),
            (r#""1500us""#, "not a whole number of milliseconds"),
            ("-5", "negative"),
            (r#""soon""#, "timeout: "),
        ] {
            let error = with(refused).unwrap_err();
            assert!(error.starts_with("policy \"p\": timeout: ") && error.contains(why), "{refused}: {error}");
        }
    }

    #[test]
    fn errors_name_the_policy_and_keep_core_codes() {
        let zero =
            r#"{"p": {"bandwidths": [{"capacity": 0, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}}]}}"#;
        let error = Policies::parse(zero).unwrap_err();
        assert!(error.starts_with("policy \"p\": NON_POSITIVE_CAPACITY"), "{error}");
        let typo = r#"{"p": {"bandwidth": []}}"#;
        let error = Policies::parse(typo).unwrap_err();
        assert!(error.contains("unknown field `bandwidth`"), "{error}");
        assert!(
            error.ends_with("or a policy field: version, strategy, failure, shadow, timeout, idleGrace, legacyHeaders"),
            "{error}"
        );
        let nested = r#"{"p": {"bandwidths": [{"capacity": 1, "initalTokens": 1, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}}]}}"#;
        let error = Policies::parse(nested).unwrap_err();
        assert!(error.contains("unknown field `initalTokens`") && !error.contains("policy field"), "{error}");
        let nested_bandwidths = r#"{"p": {"bandwidths": [{"capacity": 1, "bandwidths": 1, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}}]}}"#;
        let error = Policies::parse(nested_bandwidths).unwrap_err();
        assert!(error.contains("unknown field `bandwidths`") && !error.contains("policy field"), "{error}");
        let bad_field = r#"{"p": {"version": -1, "bandwidths": []}}"#;
        assert!(Policies::parse(bad_field).unwrap_err().starts_with("policy \"p\""));
        assert!(Policies::parse(r#"{"no spaces": {}}"#).unwrap_err().contains("policy name"));
        assert!(Policies::parse("[]").is_err());
        assert!(Policies::parse("{").is_err());
        let unicode_id = r#"{"p": {"bandwidths": [{"id": "é", "capacity": 1, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}}]}}"#;
        assert!(Policies::parse(unicode_id).unwrap_err().contains("printable ASCII"));
        let bandwidths = r#"[{"capacity": 5, "refill": {"kind": "greedy", "tokens": 5, "period": "1m"}}]"#;
        for repeated in [
            format!(r#"{{"login": {{"failure": "closed", "bandwidths": {bandwidths}}}, "login": {{"bandwidths": {bandwidths}}}}}"#),
            format!(r#"{{"login": {{"failure": "closed", "bandwidths": {bandwidths}, "failure": "open"}}}}"#),
            r#"{"p": {"bandwidths": [{"capacity": 5, "capacity": 9, "refill": {"kind": "greedy", "tokens": 5, "period": "1m"}}]}}"#.to_owned(),
        ] {
            let error = Policies::parse(&repeated).unwrap_err();
            assert!(error.starts_with("POLICIES: \"") && error.contains("appears twice in one object"), "{error}");
        }
        let endless_grace = r#"{"p": {"idleGrace": {"days": 1000000}, "bandwidths": [{"capacity": 1, "refill": {"kind": "greedy", "tokens": 1, "period": "1s"}}]}}"#;
        assert!(Policies::parse(endless_grace).unwrap_err().contains("idleGrace: longer than 2^64 ns"));
    }
}
