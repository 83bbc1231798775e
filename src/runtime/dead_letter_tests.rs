use std::sync::Arc;

use rdkafka::message::Headers;
use rdkafka::producer::BaseProducer;
use rdkafka::ClientConfig;

use super::*;
use crate::change::Side;
use crate::metrics::Metrics;

#[test]
fn a_short_reason_is_kept_whole() {
    let reason = "expected a JSON object, got \"a string\"";
    assert_eq!(abbreviate(reason), reason);
    let exactly = "x".repeat(MAX_REASON);
    assert_eq!(abbreviate(&exactly), exactly.as_str());
}

#[test]
fn a_long_reason_keeps_its_head_and_tail_within_the_bound() {
    let field = "9".repeat(900_000);
    let reason = format!("csv field `id` (BIGINT): \"{field}x\" is not an integer");
    let short = abbreviate(&reason);
    assert!(short.len() <= MAX_REASON, "{} bytes", short.len());
    assert!(short.starts_with("csv field `id` (BIGINT): \"999"));
    assert!(short.ends_with("999x\" is not an integer"), "{short}");
    // The note counts exactly what is missing.
    let (head, rest) = short.split_once(" … [").unwrap();
    let (count, tail) = rest.split_once(" bytes elided] … ").unwrap();
    let elided: usize = count.parse().unwrap();
    assert_eq!(head.len() + elided + tail.len(), reason.len());
    assert_eq!(
        format!("{head}{}{tail}", &reason[head.len()..head.len() + elided]),
        reason
    );
}

#[test]
fn abbreviating_never_splits_a_character() {
    for shift in 0..4 {
        // Three-byte characters at every alignment relative to the cut points (slicing inside
        // one would panic).
        let reason = format!("{}{}", "a".repeat(shift), "€".repeat(2_000));
        let short = abbreviate(&reason);
        assert!(short.len() <= MAX_REASON);
        assert!(short.ends_with("€€"), "{short}");
        let (head, _) = short.split_once(" … [").unwrap();
        assert!(head.ends_with('€'));
    }
}

fn dead_record(key: usize, value: usize) -> Record {
    Record {
        side: Side::Left,
        task: 3,
        source: 3,
        offset: 42,
        timestamp: 1_700_000_000_000,
        key: Some(vec![b'k'; key]),
        value: Some(vec![b'v'; value]),
        headers: vec![("trace".to_owned(), Some(b"abc".to_vec()))],
    }
}

/// A producer with librdkafka's default `message.max.bytes` (1,000,000) and no broker: the size
/// check happens when a record is handed over, before anything is sent.
fn producer() -> BaseProducer<Deliveries> {
    ClientConfig::new()
        .set("bootstrap.servers", "127.0.0.1:9")
        .set("message.timeout.ms", "1000")
        .create_with_context(Deliveries::new(Arc::new(Metrics::new(1))))
        .unwrap()
}

fn sent(key: usize, value: usize) -> Kept {
    let msg = dead_record(key, value);
    let reason = "r".repeat(1_000_000);
    let dead = Dead {
        msg: &msg,
        topic: "in",
        reason: &reason,
    };
    send(&producer(), "in.dlq", &dead, 0).unwrap()
}

#[test]
fn a_dead_letter_over_the_limit_drops_the_value_then_the_key() {
    // The reason is abbreviated: a small record with a 1 MB reason goes whole.
    assert_eq!(sent(10, 900_000), Kept::All);
    assert_eq!(sent(10, 999_500), Kept::NoValue);
    assert_eq!(sent(999_500, 10), Kept::Nothing);
}

#[test]
fn the_headers_name_the_source_and_what_was_left_out() {
    let msg = dead_record(2, 2);
    let dead = Dead {
        msg: &msg,
        topic: "in",
        reason: "bad",
    };
    let names = |kept: Kept| -> Vec<(String, String)> {
        let h = headers(&dead, kept);
        (h.iter())
            .map(|h| {
                let v = String::from_utf8_lossy(h.value.unwrap_or_default()).into_owned();
                (h.key.to_owned(), v)
            })
            .collect()
    };
    let all = names(Kept::All);
    assert_eq!(all[0], ("trace".into(), "abc".into()));
    assert!(all.contains(&("sidejoin.error".into(), "bad".into())));
    assert!(all.contains(&("sidejoin.source.offset".into(), "42".into())));
    assert!(all.contains(&("sidejoin.source.partition".into(), "3".into())));
    assert!(!all.iter().any(|(k, _)| k == "sidejoin.omitted"));
    let none = names(Kept::Nothing);
    assert!(!none.iter().any(|(k, _)| k == "trace"));
    assert!(none.contains(&("sidejoin.omitted".into(), "key, value, headers".into())));
    assert!(names(Kept::NoValue).contains(&("sidejoin.omitted".into(), "value".into())));
}
