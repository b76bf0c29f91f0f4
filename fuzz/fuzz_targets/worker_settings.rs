//! Any text as the worker's configuration (`API_PREFIX`, `POLICIES`, `ROUTES`, `CORS_ORIGINS`),
//! then a request path and header value through the routes it makes: reading never panics, every
//! route it accepts names a policy it read and costs at least a token, and a route matching the
//! path keys its bucket or refuses with a 4xx.
#![no_main]

use edgebucket::worker::{api::ApiPrefix, cors::AllowedOrigins, policy::Policies, routes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| {
    // prefix \0 policies \0 routes \0 cors origins \0 path \0 header value
    let mut fields = input.split('\0');
    let mut field = || fields.next().unwrap_or_default();
    let (prefix, policies, route_json, cors, path, header) = (field(), field(), field(), field(), field(), field());
    let _ = AllowedOrigins::parse(cors);
    let prefix = ApiPrefix::parse(prefix).unwrap_or_default();
    let Ok(policies) = Policies::parse(policies) else { return };
    let Ok(routes) = routes::parse(route_json, &policies, &prefix) else { return };
    for route in &routes {
        assert!(policies.get(&route.policy).is_some() && route.cost >= 1, "{route:?}");
    }
    let routes::PathReading::Clear(parts) = routes::read_path(path) else { return };
    for method in [routes::Method::Plain("GET"), routes::Method::Plain("post"), routes::Method::Preflight] {
        let Some((route, captures)) = routes::find(&routes, method, &parts) else { continue };
        if let Err(error) = routes::bucket_key(route, &captures, |_| Some(header.to_owned())) {
            assert!((400..500).contains(&error.status), "{route:?} {error:?}");
        }
    }
});
