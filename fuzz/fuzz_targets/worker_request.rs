//! Any method, path and body through the worker's request decoders (service endpoint and JSON
//! command, gateway path and its split readings): never a panic, and every refusal is a 4xx,
//! never a 5xx.
#![no_main]

use edgebucket::worker::{api, routes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    // method \0 path \0 body
    let mut parts = input.splitn(3, |&b| b == 0);
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else { return };
    let body = parts.next().unwrap_or_default();
    let (Ok(method), Ok(path)) = (std::str::from_utf8(method), std::str::from_utf8(path)) else { return };

    match api::endpoint(method, path, &api::ApiPrefix::default()) {
        Ok(Some(endpoint)) => {
            if let Err(error) = api::command(&endpoint, body) {
                assert!((400..500).contains(&error.status), "{endpoint:?} {error:?}");
            }
        }
        Ok(None) => {}
        Err(error) => assert!((400..500).contains(&error.status), "{error:?}"),
    }
    let plain =
        |segments: &[String]| segments.iter().all(|s| !s.is_empty() && !s.contains('/') && s != "." && s != "..");
    match routes::read_path(path) {
        routes::PathReading::Clear(segments) => assert!(plain(&segments)),
        routes::PathReading::Unclear { known, error } => {
            assert!(plain(&known));
            assert_eq!((error.status, error.code.as_str()), (400, "INVALID_PATH"));
        }
    }
    let readings = routes::split_readings(path);
    for reading in &readings {
        assert!(plain(reading) && reading.iter().all(|s| !s.contains(['\\', ';'])), "{reading:?}");
    }
    // Where the gateway skips the split readings, they would only repeat the plain one.
    if routes::one_reading(path) {
        let routes::PathReading::Clear(parts) = routes::read_path(path) else { panic!("{path:?} is unclear") };
        assert!(readings.iter().all(|reading| *reading == parts), "{path:?}: {readings:?} against {parts:?}");
    }
});
