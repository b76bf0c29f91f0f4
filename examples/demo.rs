//! A client that wants to send 12 requests at once, against a bucket of 5 per second in bursts
//! of 5 and 10 per 3 seconds. It sends what the bucket admits, waits exactly as long as the
//! probe says when refused, and finally stores the bucket as bytes and reads it back.
//!
//! Run with `make demo` (or `cargo run --example demo`).

use std::thread::sleep;
use std::time::{Duration, Instant};

use edgebucket::{codec, Bandwidth, Bucket};

fn main() -> Result<(), edgebucket::Error> {
    let mut bucket = Bucket::builder()
        .add_limit(Bandwidth::builder().capacity(5).refill_greedy(5, Duration::from_secs(1)).id("per-second").build()?)
        .add_limit(
            Bandwidth::builder().capacity(10).refill_intervally(10, Duration::from_secs(3)).id("per-3s").build()?,
        )
        .build()?;

    let start = Instant::now();
    let mut sent = 0;
    while sent < 12 {
        let probe = bucket.try_consume_and_return_remaining(1)?;
        let at = start.elapsed().as_millis();
        if probe.consumed {
            sent += 1;
            println!("{at:>5} ms  request {sent:>2} sent      remaining {:>2}", probe.remaining_tokens);
        } else {
            let wait = Duration::from_nanos(probe.nanos_to_wait_for_refill as u64);
            println!(
                "{at:>5} ms  refused: wait {:>4} ms (full again in {} ms)",
                wait.as_millis(),
                probe.nanos_to_wait_for_reset / 1_000_000
            );
            sleep(wait);
        }
    }

    let diagnostics = bucket.diagnostics();
    for b in &diagnostics.bandwidths {
        println!(
            "bandwidth {:<10} {:>2}/{:<2} tokens, full in {} ms",
            b.id.as_deref().unwrap_or("-"),
            b.available_tokens,
            b.capacity,
            b.nanos_to_full_refill / 1_000_000
        );
    }
    let bytes = codec::encode(bucket.as_token_bucket(), Some(1));
    let decoded = codec::decode(&bytes)?;
    assert_eq!(&decoded.bucket, bucket.as_token_bucket());
    println!("stored as {} bytes and read back identical", bytes.len());
    Ok(())
}
