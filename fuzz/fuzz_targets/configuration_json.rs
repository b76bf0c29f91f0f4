//! Any text as a JSON configuration: parsing and validation never panic, and a configuration
//! that validates prints to JSON that reads back as the same configuration.
#![no_main]

use edgebucket::{BucketConfiguration, ConfigurationSpec};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(spec) = serde_json::from_str::<ConfigurationSpec>(text) else { return };
    let Ok(configuration) = BucketConfiguration::try_from(spec) else { return };
    let printed = serde_json::to_string(&configuration).expect("configurations print");
    let back: BucketConfiguration = serde_json::from_str(&printed).expect("printed configurations read back");
    assert_eq!(back, configuration);
});
