//! The JSON configuration schema: forms accepted, canonical output, typed errors.

use edgebucket::{Bandwidth, BucketConfiguration, ConfigurationSpec, Error, RefillKind, TokensInheritanceStrategy};
use serde_json::json;

const MS: i64 = 1_000_000;
const SEC: i64 = 1_000_000_000;

fn configuration(value: serde_json::Value) -> Result<BucketConfiguration, Error> {
    let spec: ConfigurationSpec = serde_json::from_value(value).expect("well-shaped");
    BucketConfiguration::try_from(spec)
}

fn period_of(period: serde_json::Value) -> Result<i64, Error> {
    let config = configuration(json!({
        "bandwidths": [{ "capacity": 1, "refill": { "kind": "greedy", "tokens": 1, "period": period } }]
    }))?;
    Ok(config.bandwidths()[0].refill().period_nanos())
}

#[test]
fn durations_in_every_form() {
    assert_eq!(period_of(json!(250)).unwrap(), 250 * MS);
    assert_eq!(period_of(json!("250ms")).unwrap(), 250 * MS);
    assert_eq!(period_of(json!("1s")).unwrap(), SEC);
    assert_eq!(period_of(json!("10 minutes")).unwrap(), 600 * SEC);
    assert_eq!(period_of(json!("1h")).unwrap(), 3600 * SEC);
    assert_eq!(period_of(json!("1d")).unwrap(), 86_400 * SEC);
    assert_eq!(period_of(json!("1h 30m")).unwrap(), 5400 * SEC);
    assert_eq!(period_of(json!({ "seconds": 1 })).unwrap(), SEC);
    assert_eq!(period_of(json!({ "minutes": 1, "seconds": 30, "nanoseconds": 7 })).unwrap(), 90 * SEC + 7);
}

#[test]
fn bad_durations_are_typed_errors() {
    for bad in [json!("abc"), json!(""), json!("-1s"), json!(1.5), json!(-5)] {
        let err = period_of(bad.clone()).unwrap_err();
        assert_eq!(err.code(), "INVALID_DURATION", "{bad}");
    }
    assert_eq!(period_of(json!(0)).unwrap_err().code(), "NON_POSITIVE_REFILL_PERIOD");
    // Past 2^53 - 1 a JSON number may already be rounded (2^53 + 1 reads as 2^53): refused.
    assert_eq!(period_of(json!(9_007_199_254_740_993u64)).unwrap_err().code(), "INVALID_DURATION");
    assert_eq!(period_of(json!(9_007_199_254_740_992u64)).unwrap_err().code(), "INVALID_DURATION");
    assert_eq!(period_of(json!("300 years")).unwrap_err().code(), "REFILL_PERIOD_TOO_LONG");
    // Shape errors are serde's, with a message that says what was expected.
    let err = serde_json::from_value::<ConfigurationSpec>(json!({
        "bandwidths": [{ "capacity": 1, "refill": { "kind": "greedy", "tokens": 1, "period": true } }]
    }))
    .unwrap_err();
    assert!(err.to_string().contains("a duration"), "{err}");
    let err = serde_json::from_value::<ConfigurationSpec>(json!({
        "bandwidths": [{ "capacity": 1, "refill": { "kind": "greedy", "tokens": 1, "period": { "fortnights": 1 } } }]
    }))
    .unwrap_err();
    assert!(err.to_string().contains("unknown field"), "{err}");
}

#[test]
fn every_refill_kind_with_ids_and_initial_tokens() {
    let config = configuration(json!({
        "bandwidths": [
            { "id": "burst", "capacity": 50, "refill": { "kind": "greedy", "tokens": 10, "period": "1s" } },
            { "capacity": 1000, "initialTokens": 100, "refill": { "kind": "intervally", "tokens": 1000, "period": "1h" } },
            { "capacity": 400, "refill": { "kind": "intervallyAligned", "tokens": 400, "period": { "hours": 1 },
              "firstRefillTime": "2026-11-21T17:00:00Z", "adaptiveInitialTokens": true } }
        ]
    }))
    .unwrap();
    let [burst, hourly, aligned] = config.bandwidths() else { panic!("three bandwidths") };
    assert_eq!((burst.id(), burst.capacity(), burst.refill().kind()), (Some("burst"), 50, RefillKind::Greedy));
    assert_eq!((hourly.initial_tokens(), hourly.refill().kind()), (100, RefillKind::Intervally));
    assert_eq!(
        aligned.refill().kind(),
        RefillKind::IntervallyAligned { first_refill_nanos: 1_795_280_400 * SEC, adaptive_initial_tokens: true }
    );
}

#[test]
fn instants_as_epoch_milliseconds_or_rfc3339() {
    let first = |time: serde_json::Value| -> Result<i64, Error> {
        let config = configuration(json!({ "bandwidths": [{ "capacity": 1,
            "refill": { "kind": "intervallyAligned", "tokens": 1, "period": "1s", "firstRefillTime": time } }] }))?;
        match config.bandwidths()[0].refill().kind() {
            RefillKind::IntervallyAligned { first_refill_nanos, .. } => Ok(first_refill_nanos),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(first(json!(1_795_280_400_000i64)).unwrap(), 1_795_280_400 * SEC);
    assert_eq!(first(json!("2026-11-21T17:00:00.25Z")).unwrap(), 1_795_280_400 * SEC + 250 * MS);
    assert_eq!(first(json!(-1000)).unwrap_err().code(), "FIRST_REFILL_BEFORE_EPOCH");
    assert_eq!(first(json!("yesterday")).unwrap_err().code(), "INVALID_INSTANT");
    // Text before 1970 is outside humantime's RFC 3339 range: unreadable, and the message says so.
    let before = first(json!("1969-12-31T23:59:59Z")).unwrap_err();
    assert_eq!(before.code(), "INVALID_INSTANT");
    assert!(before.to_string().contains("from 1970 on"), "{before}");
    assert!(before.to_string().starts_with("invalid instant"), "{before}");
    assert_eq!(first(json!(1.5)).unwrap_err().code(), "INVALID_INSTANT");
}

#[test]
fn refill_fields_must_fit_the_kind() {
    let misfits = [
        json!({ "kind": "greedy", "tokens": 1, "period": "1s", "firstRefillTime": 0 }),
        json!({ "kind": "greedy", "tokens": 1, "period": "1s", "adaptiveInitialTokens": true }),
        // Even false: the field is one only an aligned refill has.
        json!({ "kind": "intervally", "tokens": 1, "period": "1s", "adaptiveInitialTokens": false }),
        json!({ "kind": "intervallyAligned", "tokens": 1, "period": "1s" }),
        json!({ "kind": "intervallyAligned", "tokens": 1, "period": "1s", "adaptiveInitialTokens": true }),
    ];
    for refill in misfits {
        let err = configuration(json!({ "bandwidths": [{ "capacity": 1, "refill": refill }] })).unwrap_err();
        assert_eq!(err.code(), "INVALID_CONFIGURATION", "{refill}");
    }
}

#[test]
fn rules_keep_their_codes_through_json() {
    let bandwidth = |capacity: i64, tokens: i64, period: &str| {
        json!({
        "capacity": capacity, "refill": { "kind": "greedy", "tokens": tokens, "period": period } })
    };
    let cases = [
        (json!({ "bandwidths": [] }), "EMPTY_CONFIGURATION"),
        (json!({ "bandwidths": [bandwidth(0, 1, "1s")] }), "NON_POSITIVE_CAPACITY"),
        (json!({ "bandwidths": [bandwidth(1, 0, "1s")] }), "NON_POSITIVE_REFILL_TOKENS"),
        (json!({ "bandwidths": [bandwidth(10, 10, "5ns")] }), "TOO_HIGH_REFILL_RATE"),
        (
            json!({ "bandwidths": [{ "id": "a", "capacity": 1, "refill": { "kind": "greedy", "tokens": 1, "period": "1s" } },
                                   { "id": "a", "capacity": 2, "refill": { "kind": "greedy", "tokens": 1, "period": "1s" } }] }),
            "DUPLICATE_BANDWIDTH_ID",
        ),
    ];
    for (value, code) in cases {
        assert_eq!(configuration(value).unwrap_err().code(), code);
    }
}

#[test]
fn unknown_fields_are_rejected() {
    let err = serde_json::from_value::<ConfigurationSpec>(json!({
        "bandwidths": [{ "capacity": 1, "initalTokens": 1, "refill": { "kind": "greedy", "tokens": 1, "period": "1s" } }]
    }))
    .unwrap_err();
    assert!(err.to_string().contains("initalTokens"), "{err}");
}

#[test]
fn canonical_output_round_trips_exactly() {
    let config = configuration(json!({
        "bandwidths": [
            { "id": "burst", "capacity": 50, "refill": { "kind": "greedy", "tokens": 10, "period": { "seconds": 1, "nanoseconds": 3 } } },
            { "capacity": 400, "initialTokens": 7, "refill": { "kind": "intervallyAligned", "tokens": 400, "period": "1h",
              "firstRefillTime": "2026-11-21T17:00:00.123456789Z" } }
        ]
    }))
    .unwrap();
    let value = serde_json::to_value(&config).unwrap();
    assert_eq!(
        value,
        json!({ "bandwidths": [
            { "id": "burst", "capacity": 50, "refill": { "kind": "greedy", "tokens": 10, "period": "1s 3ns" } },
            { "capacity": 400, "initialTokens": 7, "refill": { "kind": "intervallyAligned", "tokens": 400, "period": "1h",
              "firstRefillTime": "2026-11-21T17:00:00.123456789Z", "adaptiveInitialTokens": false } }
        ] })
    );
    let back: BucketConfiguration = serde_json::from_value(value).unwrap();
    assert_eq!(back, config);
}

#[test]
fn bandwidths_and_strategies_are_serde_types() {
    let b: Bandwidth =
        serde_json::from_str(r#"{"capacity":3,"refill":{"kind":"intervally","tokens":3,"period":"1m"}}"#).unwrap();
    assert_eq!(b.refill().period_nanos(), 60 * SEC);
    let err =
        serde_json::from_str::<Bandwidth>(r#"{"capacity":-3,"refill":{"kind":"greedy","tokens":3,"period":"1m"}}"#)
            .unwrap_err();
    assert!(err.to_string().contains("capacity must be positive"), "{err}");
    let s: TokensInheritanceStrategy = serde_json::from_str(r#""AS_IS""#).unwrap();
    assert_eq!(s, TokensInheritanceStrategy::AsIs);
    assert_eq!(serde_json::to_string(&TokensInheritanceStrategy::Additive).unwrap(), r#""ADDITIVE""#);
    assert!(serde_json::from_str::<TokensInheritanceStrategy>(r#""SOMETIMES""#).is_err());
}
