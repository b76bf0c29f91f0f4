//! The cost of one rate-limit decision, beside governor's `check()` in the same run.
//!
//! Two families, so that like is compared with like:
//! - *decision only*: the time is given (edgebucket's `TokenBucket`) or a fake clock is advanced
//!   (governor's `FakeRelativeClock`), so no clock is read;
//! - *with a clock read*: edgebucket's `Bucket` on its nanosecond clock (`Instant`) and governor
//!   on its default clock (quanta).
//!
//! Every quota admits one token per nanosecond and time advances 1 ns per call, so each
//! decision takes the admitting path. governor's limiter is lock-free and shared (`&self`,
//! atomics); edgebucket's bucket is owned (`&mut self`) and is shared by its host (a Durable
//! Object, a JS isolate, a mutex).

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use edgebucket::{Bandwidth, Bucket, BucketConfiguration, TokenBucket};
use governor::clock::{FakeRelativeClock, QuantaClock};
use governor::{Quota, RateLimiter};

fn per_nanosecond(capacity: i64) -> Bandwidth {
    Bandwidth::builder().capacity(capacity).refill_greedy(1_000_000_000, Duration::from_secs(1)).build().unwrap()
}

fn governor_quota() -> Quota {
    Quota::per_second(NonZeroU32::new(1_000_000_000).unwrap()).allow_burst(NonZeroU32::new(1_000_000).unwrap())
}

fn decision_only(c: &mut Criterion) {
    let mut group = c.benchmark_group("decision only");

    let mut one = TokenBucket::new(BucketConfiguration::new(vec![per_nanosecond(1_000_000)]).unwrap(), 0);
    let mut now = 0i64;
    group.bench_function("edgebucket try_consume", |b| {
        b.iter(|| {
            now += 1;
            black_box(one.try_consume(black_box(1), now).unwrap())
        })
    });

    // Each case has its own bucket and clock: a shared bucket would see the clock go back.
    let mut probed = TokenBucket::new(BucketConfiguration::new(vec![per_nanosecond(1_000_000)]).unwrap(), 0);
    let mut now = 0i64;
    group.bench_function("edgebucket try_consume_and_return_remaining", |b| {
        b.iter(|| {
            now += 1;
            black_box(probed.try_consume_and_return_remaining(black_box(1), now).unwrap())
        })
    });

    let three = vec![
        per_nanosecond(1_000_000),
        Bandwidth::builder().capacity(i64::MAX / 4).refill_greedy(1, Duration::from_secs(1)).build().unwrap(),
        Bandwidth::builder().capacity(i64::MAX / 4).refill_intervally(1, Duration::from_secs(3600)).build().unwrap(),
    ];
    let mut three = TokenBucket::new(BucketConfiguration::new(three).unwrap(), 0);
    let mut now = 0i64;
    group.bench_function("edgebucket try_consume, 3 bandwidths", |b| {
        b.iter(|| {
            now += 1;
            black_box(three.try_consume(black_box(1), now).unwrap())
        })
    });

    let clock = FakeRelativeClock::default();
    let limiter = RateLimiter::direct_with_clock(governor_quota(), clock.clone());
    group.bench_function("governor check (fake clock)", |b| {
        b.iter(|| {
            clock.advance(Duration::from_nanos(1));
            black_box(limiter.check().is_ok())
        })
    });
    group.finish();
}

fn with_clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("with a clock read");

    let mut bucket =
        Bucket::builder().add_limit(per_nanosecond(1_000_000)).with_nanosecond_precision().build().unwrap();
    group.bench_function("edgebucket Bucket::try_consume (Instant)", |b| {
        b.iter(|| black_box(bucket.try_consume(black_box(1)).unwrap()))
    });

    let limiter = RateLimiter::direct_with_clock(governor_quota(), QuantaClock::default());
    group.bench_function("governor check (quanta)", |b| b.iter(|| black_box(limiter.check().is_ok())));
    group.finish();
}

criterion_group!(benches, decision_only, with_clock);
criterion_main!(benches);
